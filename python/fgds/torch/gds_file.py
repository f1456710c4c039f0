"""fgds.torch.GdsFile: torch.cuda.gds.GdsFile's methods and arguments on
libfgds, so code written for torch.cuda.gds switches by changing one
import:

    from fgds.torch import GdsFile   # was: from torch.cuda.gds import GdsFile
    f = GdsFile(path, os.O_CREAT | os.O_RDWR)
    f.save_storage(src.untyped_storage(), offset=0)
    f.load_storage(dst.untyped_storage(), offset=0)

Beyond torch's: works on every file system (O_DIRECT is asked for and
dropped where the file system refuses it, e.g. tmpfs; libfgds picks
O_DIRECT or the page cache per chunk anyway), takes CPU storages too, and
fails with OSError (and EOFError for a load past the end of the file)
instead of RuntimeError.
"""

import errno
import os

import torch

from ..buffers import memory_of
from . import _drivers, host_io


def gds_register_buffer(s):
    """Registers a CUDA storage with the device's libfgds driver (optional:
    lets gds_deregister_buffer fence the I/O in flight on it)."""
    _driver_of(s).register_buffer(s)


def gds_deregister_buffer(s):
    _driver_of(s).deregister_buffer(s)


class _FileHandle:
    """A registered file: registered with each device's driver when first
    used there, deregistered from all of them together."""

    def __init__(self, fd):
        self.fd = fd
        self.drivers = []

    def driver(self, storage):
        driver = _driver_of(storage)
        if driver not in self.drivers:
            driver.register_file(self.fd)
            self.drivers.append(driver)
        return driver

    def deregister(self):
        for driver in self.drivers:
            driver.deregister_file(self.fd)
        self.drivers = []


class GdsFile:
    """A file opened with os.open(filename, flags | O_DIRECT) for loading
    and saving storages at byte offsets."""

    def __init__(self, filename, flags):
        self.filename = filename
        self.flags = flags
        try:
            self.fd = os.open(filename, flags | os.O_DIRECT)
        except OSError as error:
            if error.errno != errno.EINVAL:
                raise
            self.fd = os.open(filename, flags)
        self._host_fd = None
        self.handle = None
        self.register_handle()

    def __del__(self):
        if getattr(self, "handle", None) is not None:
            self.deregister_handle()
        for name in ("_host_fd", "fd"):
            if getattr(self, name, None) is not None:
                os.close(getattr(self, name))
                setattr(self, name, None)

    def _buffered_fd(self):
        # CPU storages are not 4 KiB-aligned, which O_DIRECT needs: they go
        # through a buffered twin of the same open file description's file.
        if self._host_fd is None:
            access = self.flags & (os.O_RDONLY | os.O_WRONLY | os.O_RDWR)
            self._host_fd = os.open(f"/proc/self/fd/{self.fd}",
                                    access | os.O_CLOEXEC)
        return self._host_fd

    def register_handle(self):
        """Registers the file (the drivers open their descriptors of it on
        first use)."""
        assert self.handle is None, \
            "Cannot register a handle that is already registered."
        self.handle = _FileHandle(self.fd)

    def deregister_handle(self):
        assert self.handle is not None, \
            "Cannot deregister a handle that is not registered."
        self.handle.deregister()
        self.handle = None

    def load_storage(self, storage, offset=0):
        """Reads storage.nbytes() bytes at `offset` of the file into the
        storage."""
        assert self.handle is not None, \
            "Cannot load data from a file that is not registered."
        memory = memory_of(storage, writable=True)
        if memory.is_cuda:
            # Queued work still using the storage finishes before libfgds
            # overwrites it from its own streams.
            torch.cuda.synchronize(storage.device)
            n = self.handle.driver(storage).pread(self.fd, storage,
                                                  file_offset=offset)
            if n != memory.nbytes:
                raise EOFError(f"{self.filename} ends at byte {offset + n}, "
                               f"before the storage's {memory.nbytes} bytes")
        else:
            host_io.read_into(self._buffered_fd(),
                              [(memory.address, memory.nbytes, offset)])

    def save_storage(self, storage, offset=0):
        """Writes every byte of the storage at `offset` of the file, once
        the device work queued before the call is done (libfgds reads the
        memory on its own streams, so this synchronizes the device)."""
        assert self.handle is not None, \
            "Cannot save data to a file that is not registered."
        memory = memory_of(storage)
        if memory.is_cuda:
            torch.cuda.synchronize(storage.device)
            self.handle.driver(storage).pwrite(self.fd, storage,
                                               file_offset=offset)
        else:
            host_io.write_from(self._buffered_fd(),
                               [(memory.address, memory.nbytes, offset)])


def _driver_of(storage):
    memory = memory_of(storage)
    if not memory.is_cuda:
        raise ValueError("gds buffers are CUDA storages")
    index = memory.device_index
    if index is None:
        index = torch.cuda.current_device()
    return _drivers.driver_for(index)
