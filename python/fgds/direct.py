"""The libfgds direct API (include/fgds/fgds.h): file bytes into GPU memory
and back for local files, without the daemon.

    with fgds.Driver() as driver:            # the current CUDA context
        n = driver.pread(fd, tensor)          # fills the whole tensor
        futures = [driver.read_async(fd, t, file_offset=o) for t, o in parts]
        for f in futures:
            f.result()                        # bytes, or raises OSError

Buffers are CUDA memory given as any object fgds.memory_of accepts (torch
tensors and storages, CuPy arrays, DLPack or __cuda_array_interface__
exporters). Files are descriptors (os.open) or objects with fileno().
Every failure raises OSError with the C call's errno.
"""

import ctypes
import errno
import threading

from . import _abi
from .buffers import memory_of
from .errors import check


def _fileno(file):
    return file if isinstance(file, int) else file.fileno()


def _check(result, what):
    return check(result, what, _abi.last_error)


class IoFuture:
    """One asynchronous I/O (fgds_io_submit). result() waits and returns
    the bytes moved (short only at end of file) or raises OSError; path and
    source say how they moved (GPU_PATH_*, SRC_* bits) once done.
    Every future must be waited for (result() or the Driver's close)."""

    def __init__(self, driver, io, memory):
        self._driver = driver
        self._io = io
        self._memory = memory  # keeps the buffer alive while in flight
        self._done = False

    def done(self):
        return self._done or self._wait(0)

    def result(self, timeout=None):
        """Waits up to `timeout` seconds (None: forever); TimeoutError if the
        I/O is still running then."""
        timeout_us = -1 if timeout is None else int(timeout * 1e6)
        if not self._done and not self._wait(timeout_us):
            raise TimeoutError("fgds I/O still in flight")
        # The I/O's own result: fgds_last_error speaks of this thread's
        # calls, not of it.
        return check(self._io.result, "fgds I/O")

    @property
    def path(self):
        return self._io.path if self._done else None

    @property
    def source(self):
        return self._io.source if self._done else None

    def _wait(self, timeout_us):
        ret = self._driver._lib.fgds_io_wait(self._driver._handle,
                                              ctypes.byref(self._io),
                                              timeout_us)
        if ret == -errno.ETIME:  # not complete yet
            return False
        _check(ret, "fgds_io_wait")
        self._done = True
        self._driver._forget(self)
        return True


class Driver:
    """An fgds_driver: worker threads and pinned staging memory on one CUDA
    context. Thread-safe. Arguments as struct fgds_driver_params:
      device: None = the context current on the calling thread (torch's,
              once torch.cuda is initialised); an int = that device's
              primary context (the one torch and CuPy use);
      workers, chunk_bytes, staging_bytes: 0 = the library's defaults;
      page_cache: False never serves aligned reads from the page cache.
    """

    def __init__(self, device=None, workers=0, chunk_bytes=0,
                 staging_bytes=0, page_cache=True):
        self._lib = _abi.direct()
        params = _abi.DriverParams(workers=workers, chunk_bytes=chunk_bytes,
                                   staging_bytes=staging_bytes)
        if device is not None:
            params.flags |= _abi.DRIVER_PRIMARY_CTX
            params.device = device
        if not page_cache:
            params.flags |= _abi.DRIVER_NO_PAGE_CACHE
        handle = ctypes.c_void_p()
        _check(self._lib.fgds_driver_open(ctypes.byref(handle),
                                          ctypes.byref(params)),
               "fgds_driver_open")
        self._handle = handle
        self._in_flight = set()
        self._lock = threading.Lock()

    # ---- lifetime ----------------------------------------------------------

    def close(self):
        """Waits for every I/O still in flight, then closes the driver
        (registrations included). Idempotent."""
        if self._handle is None:
            return
        for future in list(self._in_flight):
            future.done() or future._wait(-1)
        _check(self._lib.fgds_driver_close(self._handle), "fgds_driver_close")
        self._handle = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        if getattr(self, "_handle", None) is not None:
            self.close()

    # ---- information -------------------------------------------------------

    def query(self):
        """fgds_driver_query as a dict: device, dmabuf_supported,
        pci_bus_id, path (GPU_PATH_*), workers, chunk_bytes, staging_bytes,
        direct_unavailable (why the direct path is off; "" when on)."""
        info = _abi.DriverInfo()
        _check(self._lib.fgds_driver_query(self._live(), ctypes.byref(info)),
               "fgds_driver_query")
        result = _struct_dict(info)
        result["pci_bus_id"] = info.pci_bus_id.decode()
        result["direct_unavailable"] = info.direct_unavailable.decode()
        return result

    def stats(self):
        """fgds_driver_get_stats as a dict (ios, errors, bytes_*)."""
        stats = _abi.DriverStats()
        _check(self._lib.fgds_driver_get_stats(self._live(),
                                               ctypes.byref(stats)),
               "fgds_driver_get_stats")
        return _struct_dict(stats)

    # ---- registration ------------------------------------------------------

    def register_buffer(self, buffer):
        """Registers the buffer's device memory (fgds_buf_register)."""
        memory = memory_of(buffer)
        _check(self._lib.fgds_buf_register(self._live(), memory.address,
                                           memory.nbytes, 0),
               "fgds_buf_register")

    def deregister_buffer(self, buffer):
        """fgds_buf_deregister: returns once I/O in flight on it is done."""
        _check(self._lib.fgds_buf_deregister(self._live(),
                                             memory_of(buffer).address),
               "fgds_buf_deregister")

    def register_file(self, file):
        _check(self._lib.fgds_file_register(self._live(), _fileno(file)),
               "fgds_file_register")

    def deregister_file(self, file):
        _check(self._lib.fgds_file_deregister(self._live(), _fileno(file)),
               "fgds_file_deregister")

    # ---- synchronous I/O ---------------------------------------------------

    def pread(self, file, buffer, size=None, file_offset=0, buf_offset=0):
        """Reads `size` bytes (default: the rest of the buffer after
        buf_offset) at file_offset into the buffer; returns bytes read."""
        memory = memory_of(buffer, writable=True)
        size = _size(memory, size, buf_offset)
        return _check(self._lib.fgds_pread(self._live(), _fileno(file),
                                           memory.address, size, file_offset,
                                           buf_offset), "fgds_pread")

    def pwrite(self, file, buffer, size=None, file_offset=0, buf_offset=0):
        """Writes `size` bytes of the buffer (default: all after
        buf_offset) at file_offset; returns bytes written. Device work
        producing the buffer must be complete first (synchronize its
        stream): libfgds reads it on its own streams."""
        memory = memory_of(buffer)
        size = _size(memory, size, buf_offset)
        return _check(self._lib.fgds_pwrite(self._live(), _fileno(file),
                                            memory.address, size, file_offset,
                                            buf_offset), "fgds_pwrite")

    # ---- asynchronous I/O --------------------------------------------------

    def read_async(self, file, buffer, size=None, file_offset=0,
                   buf_offset=0):
        return self.submit([(_abi.OP_READ, file, buffer, size, file_offset,
                             buf_offset)])[0]

    def write_async(self, file, buffer, size=None, file_offset=0,
                    buf_offset=0):
        return self.submit([(_abi.OP_WRITE, file, buffer, size, file_offset,
                             buf_offset)])[0]

    def submit(self, requests):
        """Starts many I/Os with one fgds_io_submit and returns an IoFuture
        per request, in order. Each request is a tuple (op, file, buffer,
        size, file_offset, buf_offset) with op fgds.OP_READ or
        fgds.OP_WRITE and size None for the rest of the buffer."""
        ios = (_abi.Io * len(requests))()
        memories = []
        for io, (op, file, buffer, size, file_offset, buf_offset) in zip(
                ios, requests):
            memory = memory_of(buffer, writable=(op == _abi.OP_READ))
            io.opcode = op
            io.fd = _fileno(file)
            io.devptr = memory.address
            io.size = _size(memory, size, buf_offset)
            io.file_offset = file_offset
            io.buf_offset = buf_offset
            memories.append(memory)
        if not requests:
            return []
        _check(self._lib.fgds_io_submit(self._live(), ios, len(requests)),
               "fgds_io_submit")
        futures = [IoFuture(self, io, (ios, memory))
                   for io, memory in zip(ios, memories)]
        with self._lock:
            self._in_flight.update(futures)
        return futures

    def _forget(self, future):
        with self._lock:
            self._in_flight.discard(future)

    def _live(self):
        if self._handle is None:
            raise ValueError("the fgds Driver is closed")
        return self._handle


def _size(memory, size, buf_offset):
    if size is None:
        size = memory.nbytes - buf_offset
    if buf_offset < 0 or size < 0 or buf_offset + size > memory.nbytes:
        raise ValueError(f"{size} bytes at offset {buf_offset} do not fit a "
                         f"buffer of {memory.nbytes} bytes")
    return size


def _struct_dict(struct):
    return {name: getattr(struct, name) for name, _ in struct._fields_
            if not name.startswith("reserved")}
