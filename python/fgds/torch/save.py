"""fgds.torch.save_file: tensors (CPU or GPU) into a safetensors file."""

import errno
import os

import torch

from .. import safetensors
from .._abi import OP_WRITE
from . import _drivers, dtypes, host_io


def save_file(tensors, filename, metadata=None):
    """Writes {name: tensor} to `filename` in the safetensors format, as
    safetensors.torch.save_file does: largest elements first, then by name,
    so every tensor is aligned in the file; `metadata` (str -> str) goes
    into the header. CUDA tensors are written from device memory through
    libfgds, CPU tensors with pwritev; non-contiguous tensors are written
    as their contiguous copies."""
    contiguous = {name: t.contiguous() for name, t in tensors.items()}
    order = sorted(contiguous,
                   key=lambda n: (-contiguous[n].element_size(), n))
    entries = []
    for name in order:
        tensor = contiguous[name]
        dtype = dtypes.from_torch(tensor.dtype)
        entries.append((name, dtype,
                        dtypes.safetensors_shape(dtype, tensor.shape)))
    prefix, infos = safetensors.build_header(entries, metadata)
    fd = os.open(filename,
                 os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
    try:
        os.pwrite(fd, prefix, 0)
        by_device = {}
        for info in infos:
            if info.nbytes:
                tensor = contiguous[info.name]
                by_device.setdefault(tensor.device, []).append(
                    (tensor, len(prefix) + info.begin))
        for device, transfers in by_device.items():
            if device.type == "cuda":
                _write_cuda(fd, device, transfers)
            else:
                host_io.write_from(fd, [(t.data_ptr(), _nbytes(t), offset)
                                        for t, offset in transfers])
        # A file of tensors that are all empty still ends at its header.
        os.ftruncate(fd, len(prefix) + (infos[-1].end if infos else 0))
    finally:
        os.close(fd)


def _write_cuda(fd, device, transfers):
    # fgds_pwrite reads device memory after the call starts: work queued
    # on torch's streams that produces the tensors must be done first.
    torch.cuda.synchronize(device)
    driver = _drivers.driver_for(_drivers.device_index(device))
    futures = driver.submit([(OP_WRITE, fd, tensor, None, offset, 0)
                             for tensor, offset in transfers])
    errors = []
    for future, (tensor, _) in zip(futures, transfers):
        try:
            if future.result() != _nbytes(tensor):
                errors.append(OSError(errno.EIO, "short write"))
        except OSError as error:
            errors.append(error)
    if errors:
        raise errors[0]


def _nbytes(tensor):
    return tensor.numel() * tensor.element_size()
