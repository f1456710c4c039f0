"""fgds.torch.load_file: a safetensors file straight into GPU (or CPU)
tensors."""

import os

import torch

from .. import safetensors
from .._abi import OP_READ
from . import _drivers, dtypes, host_io


def load_file(filename, device="cpu"):
    """Loads every tensor of the safetensors file `filename` onto `device`
    ("cpu", "cuda", "cuda:1", an ordinal or a torch.device) and returns
    {name: tensor}, as safetensors.torch.load_file does.

    On CUDA, the bytes go from the file to each tensor's memory through
    libfgds (O_DIRECT or page cache, then the GPU, without a pageable host
    copy), all tensors in flight at once. The header is validated first
    (fgds.safetensors); a bad file raises fgds.safetensors.HeaderError, a
    failed read OSError."""
    device = _torch_device(device)
    fd = os.open(filename, os.O_RDONLY | os.O_CLOEXEC)
    try:
        header = safetensors.read_header(fd, os.fstat(fd).st_size)
        tensors = {name: _empty(info, device)
                   for name, info in header.tensors.items()}
        transfers = [(tensors[name], header.data_start + info.begin)
                     for name, info in header.tensors.items() if info.nbytes]
        if device.type == "cuda":
            _read_cuda(fd, device, transfers)
        else:
            host_io.read_into(fd, [(t.data_ptr(), _nbytes(t), offset)
                                   for t, offset in transfers])
        return tensors
    finally:
        os.close(fd)


def _read_cuda(fd, device, transfers):
    # The caching allocator may hand out memory that kernels queued on
    # torch's stream are still reading; libfgds writes it from its own
    # streams, so that work must be done first.
    torch.cuda.synchronize(device)
    driver = _drivers.driver_for(_drivers.device_index(device))
    driver.register_file(fd)
    try:
        futures = driver.submit([(OP_READ, fd, tensor, None, offset,
                                  0) for tensor, offset in transfers])
        # Wait for every I/O before reporting the first failure: none may
        # outlive its tensor.
        results = []
        for future, (tensor, _) in zip(futures, transfers):
            try:
                results.append((future.result(), tensor))
            except OSError as error:
                results.append((error, tensor))
        for result, tensor in results:
            if isinstance(result, OSError):
                raise result
            if result != _nbytes(tensor):
                raise EOFError("file ends inside a tensor's data")
    finally:
        driver.deregister_file(fd)


def _empty(info, device):
    # Bytes first, then a view: torch can view every dtype it has, while
    # some (float4, float8 in some releases) cannot be created directly.
    dtype = dtypes.to_torch(info.dtype)
    raw = torch.empty(info.nbytes, dtype=torch.uint8, device=device)
    return raw.view(dtype).reshape(dtypes.torch_shape(info.dtype, info.shape))


def _nbytes(tensor):
    return tensor.numel() * tensor.element_size()


def _torch_device(device):
    if isinstance(device, int):
        return torch.device("cuda", device)
    return torch.device(device)
