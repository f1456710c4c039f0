"""fgds: file bytes into host or GPU memory, from Python.

  fgds.Driver     the libfgds direct API: local files <-> CUDA memory,
                  synchronous and asynchronous (futures)      (direct.py)
  fgds.Session    usrbio rings against an fgds mount: iovs in host or GPU
                  memory, iors, registered files              (usrbio.py)
  fgds.memory_of  the memory of a tensor, CuPy or NumPy array, DLPack or
                  buffer-protocol object                      (buffers.py)
  fgds.torch      safetensors load_file/save_file and a GdsFile like
                  torch.cuda.gds's (needs torch)
  fgds.safetensors  the safetensors header: parse and validate, build

A thin ctypes layer over the installed C libraries (libfgds.so.0,
libfgds_usrbio.so.0; _library.py says where it looks), so one copy serves
every Python 3 and PyTorch version. Failures raise OSError with the errno.
"""

from ._abi import (GPU_PATH_BOUNCE, GPU_PATH_DIRECT, GPU_PATH_NONE, OP_READ,
                   OP_WRITE, PATH_BOUNCE, PATH_DIRECT, PATH_NONE,
                   PATH_PAGE_CACHE, PATH_RDMA, PATH_TCP, SRC_BUFFERED,
                   SRC_O_DIRECT, SRC_PAGE_CACHE)
from .buffers import Memory, memory_of
from .direct import Driver, IoFuture
from .usrbio import Completion, Ior, Iov, RegisteredFile, Session

__version__ = "0.1.0"

__all__ = [
    "Completion", "Driver", "IoFuture", "Ior", "Iov", "Memory",
    "RegisteredFile", "Session", "memory_of", "GPU_PATH_BOUNCE",
    "GPU_PATH_DIRECT", "GPU_PATH_NONE", "OP_READ", "OP_WRITE", "PATH_BOUNCE",
    "PATH_DIRECT", "PATH_NONE", "PATH_PAGE_CACHE", "PATH_RDMA", "PATH_TCP",
    "SRC_BUFFERED",
    "SRC_O_DIRECT", "SRC_PAGE_CACHE",
]
