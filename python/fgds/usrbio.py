"""usrbio rings (include/fgds/usrbio.h): batched I/O against an fgds mount
through memory shared with the daemon, in the manner of 3FS's USRBIO.

    with fgds.Session("/mnt/fgds") as session:
        iov = session.create_iov(1 << 20)           # host memory (memfd)
        ior = session.create_ior(entries=64)
        f = session.open("/mnt/fgds/shard-0.bin")   # a registered file
        ior.prep_read(iov, 0, f, file_offset=0, length=1 << 20, userdata=7)
        ior.submit()
        for cqe in ior.wait(min=1):
            n = cqe.check()                         # bytes, or OSError
            data = iov.buffer[:n]

GPU memory becomes an iov with session.wrap_gpu(tensor_or_array); entries
then name offsets inside it, and completions arrive after the device copy.
Calls raise OSError with the errno; a completion carries its own result
(bytes or -errno), turned into OSError by Completion.check().
"""

import collections
import ctypes
import os
import weakref

from . import _abi
from .buffers import memory_of
from .errors import check

OP_READ, OP_WRITE = _abi.OP_READ, _abi.OP_WRITE


class Completion(collections.namedtuple(
        "Completion", ["result", "userdata", "path", "tag"])):
    """One completion: result (bytes or -errno), the entry's userdata, path
    (PATH_DIRECT, PATH_PAGE_CACHE, PATH_BOUNCE, PATH_NONE) and tag."""

    def check(self):
        """The bytes moved, or OSError(errno) for a failed entry."""
        return check(self.result, "usrbio entry")


class _ClosedOnExit:
    """`with` support and a close when collected, for objects whose close()
    is idempotent (a half-built one, whose close raises AttributeError, and
    a failing close at collection are ignored: there is no caller to tell)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except (OSError, AttributeError):
            pass


class Session:
    """A session with the daemon serving `path` (the mountpoint or any path
    inside the mount). Closing it closes its iovs and iors still open (the
    C library needs the session to destroy them) and releases everything
    registered through it."""

    def __init__(self, path):
        self._lib = _abi.usrbio()
        self._struct = _abi.Session()
        check(self._lib.fgds_session_open(ctypes.byref(self._struct),
                                          os.fsencode(path), None),
              f"fgds_session_open({path})", self._refusing_limit)
        self._open = True
        self._children = weakref.WeakSet()  # iovs and iors to close first

    def _refusing_limit(self):
        """The daemon limit that refused the last request, in words (the
        errno alone cannot say which of docs/limits.md's limits it was)."""
        limit = self._struct.last_limit
        if limit == 0:
            return None
        return self._lib.fgds_limit_describe(limit).decode(errors="replace")

    def close(self):
        if self._open:
            for child in list(self._children):
                try:
                    child.close()
                except OSError:
                    pass  # the daemon's side goes with the session anyway
            self._lib.fgds_session_close(ctypes.byref(self._struct))
            self._open = False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        if getattr(self, "_open", False):
            self.close()

    def _live(self):
        if not self._open:
            raise ValueError("the usrbio Session is closed")
        return ctypes.byref(self._struct)

    @property
    def fileno(self):
        """The socket to the daemon (poll it for POLLHUP: daemon gone)."""
        return self._struct.sock

    # ---- iovs ----------------------------------------------------------

    def create_iov(self, size, numa_node=-1):
        """A host iov of `size` bytes (rounded up to 4096)."""
        iov = Iov(self)
        params = _abi.IovParams(size=size, numa_node=numa_node)
        check(self._lib.fgds_iov_create(self._live(),
                                        ctypes.byref(iov._struct),
                                        ctypes.byref(params)),
              "fgds_iov_create", self._refusing_limit)
        iov._open = True
        self._children.add(iov)
        return iov

    def wrap_gpu(self, buffer, staging_bytes=0, chunk_bytes=0, device=None):
        """An iov standing for the CUDA memory of `buffer` (a tensor, CuPy
        array, ...). device: an int = that device's primary context (the
        one torch and CuPy use); None = the buffer's own device where it
        names one (torch tensors), else the context current on the calling
        thread."""
        memory = memory_of(buffer, writable=True)
        if not memory.is_cuda:
            raise ValueError("wrap_gpu takes CUDA memory; use create_iov "
                             "for host memory")
        params = _abi.IovGpuParams(staging_bytes=staging_bytes,
                                   chunk_bytes=chunk_bytes)
        if device is None:
            device = memory.device_index
        if device is not None:
            params.flags = _abi.IOV_GPU_PRIMARY_CTX
            params.device = device
        iov = Iov(self, memory)
        check(self._lib.fgds_iov_wrap_gpu(self._live(),
                                          ctypes.byref(iov._struct),
                                          memory.address, memory.nbytes,
                                          ctypes.byref(params)),
              "fgds_iov_wrap_gpu", self._refusing_limit)
        iov._open = True
        self._children.add(iov)
        return iov

    # ---- iors ----------------------------------------------------------

    def create_ior(self, entries=0, io_depth=0, timeout_us=0, priority=0,
                   spin_us=0, buffered=False):
        """A ring; arguments as struct fgds_ior_params (0 = defaults)."""
        params = _abi.IorParams(entries=entries, io_depth=io_depth,
                                timeout_us=timeout_us, priority=priority,
                                spin_us=spin_us,
                                flags=_abi.IOR_BUFFERED if buffered else 0)
        ior = Ior(self)
        check(self._lib.fgds_ior_create(self._live(),
                                        ctypes.byref(ior._struct),
                                        ctypes.byref(params)),
              "fgds_ior_create", self._refusing_limit)
        ior._open = True
        self._children.add(ior)
        return ior

    # ---- files ---------------------------------------------------------

    def register_fd(self, fd):
        """Registers an open file of this mount; returns a RegisteredFile
        (the caller may close `fd` afterwards)."""
        file_id = check(self._lib.fgds_fd_register(self._live(), fd, 0),
                        "fgds_fd_register")
        return RegisteredFile(self, file_id)

    def open(self, path, flags=os.O_RDONLY, mode=0o644):
        """Opens `path` on the mount with os.open's flags, registers it and
        closes the descriptor: the registration keeps the file."""
        fd = os.open(path, flags | os.O_CLOEXEC, mode)
        try:
            return self.register_fd(fd)
        finally:
            os.close(fd)


class RegisteredFile:
    """A file registered with a session; `id` names it in entries."""

    def __init__(self, session, file_id):
        self.session = session
        self.id = file_id

    def close(self):
        """fgds_fd_unregister. Idempotent."""
        if self.id is not None and self.session._open:
            check(self.session._lib.fgds_fd_unregister(self.session._live(),
                                                       self.id),
                  "fgds_fd_unregister")
        self.id = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Iov(_ClosedOnExit):
    """Memory shared with the daemon: host (create_iov) or GPU (wrap_gpu).
    `buffer` is a writable memoryview of a host iov."""

    def __init__(self, session, gpu_memory=None):
        self.session = session
        self._struct = _abi.Iov()
        self._gpu_memory = gpu_memory  # keeps the device memory alive
        self._open = False

    @property
    def address(self):
        return self._struct.base or 0

    @property
    def size(self):
        return self._struct.size

    @property
    def id(self):
        return self._struct.id

    @property
    def is_gpu(self):
        return self._gpu_memory is not None

    @property
    def buffer(self):
        if self.is_gpu:
            raise ValueError("a GPU iov has no host buffer")
        self._check_open()
        return memoryview((ctypes.c_char * self.size).from_address(
            self.address)).cast("B")

    def gpu_path(self):
        """(path, reason) of fgds_iov_gpu_path: PATH_DIRECT or PATH_BOUNCE,
        and IOV_GPU_REASON_* saying why it is not direct."""
        self._check_open()
        reason = ctypes.c_uint32()
        path = check(self.session._lib.fgds_iov_gpu_path(
            ctypes.byref(self._struct), ctypes.byref(reason)),
            "fgds_iov_gpu_path")
        return path, reason.value

    def close(self):
        """fgds_iov_destroy. Idempotent. REQUIRES: no I/O in flight on it."""
        if self._open:
            self._open = False
            check(self.session._lib.fgds_iov_destroy(
                ctypes.byref(self._struct)), "fgds_iov_destroy")

    def _check_open(self):
        if not self._open:
            raise ValueError("the iov is closed")


class Ior(_ClosedOnExit):
    """A submission/completion ring. One thread submits and one reaps at a
    time (they may differ)."""

    def __init__(self, session):
        self.session = session
        self._lib = session._lib
        self._struct = _abi.Ior()
        self._open = False
        self._cqes = (_abi.Cqe * 0)()
        self._iovs = {}  # iovs with entries in flight stay referenced

    def prep_read(self, iov, iov_offset, file, file_offset, length,
                  userdata=0, buffered=False):
        """Queues a read of `length` bytes at `file_offset` of `file` (a
        RegisteredFile or its id) into iov bytes [iov_offset, +length)."""
        self.prep_io(OP_READ, iov, iov_offset, file, file_offset, length,
                     userdata, buffered)

    def prep_write(self, iov, iov_offset, file, file_offset, length,
                   userdata=0, buffered=False):
        self.prep_io(OP_WRITE, iov, iov_offset, file, file_offset, length,
                     userdata, buffered)

    def prep_io(self, op, iov, iov_offset, file, file_offset, length,
                userdata=0, buffered=False):
        """fgds_prep_io. OSError EAGAIN when the ring is full (reap first),
        EINVAL for a range outside the iov."""
        iov._check_open()
        # The C API checks that the range lies inside the iov.
        ret = self._lib.fgds_prep_io(
            self._ptr(), ctypes.byref(iov._struct), op,
            _abi.SQE_BUFFERED if buffered else 0, iov.address + iov_offset,
            _file_id(file), file_offset, length, userdata)
        check(ret, "fgds_prep_io")
        self._iovs[id(iov)] = iov

    def prep_fsync(self, file, datasync=False, userdata=0):
        check(self._lib.fgds_prep_fsync(
            self._ptr(), _file_id(file),
            _abi.SQE_DATASYNC if datasync else 0, userdata),
            "fgds_prep_fsync")

    def submit(self):
        """Hands every prepared entry to the daemon; returns how many."""
        return check(self._lib.fgds_ior_submit(self._ptr()), "fgds_ior_submit")

    def peek(self, max=None):
        """Ready completions (up to `max`), without waiting."""
        cqes = self._cqe_array(max)
        n = check(self._lib.fgds_ior_peek(self._ptr(), cqes, len(cqes)),
                  "fgds_ior_peek")
        return self._completions(cqes, n)

    def wait(self, min=1, max=None, timeout=None):
        """Waits until `min` completions are ready (or `timeout` seconds
        passed) and returns up to `max` of them."""
        cqes = self._cqe_array(max)
        timeout_us = -1 if timeout is None else int(timeout * 1e6)
        n = check(self._lib.fgds_ior_wait(self._ptr(), cqes, len(cqes), min,
                                          timeout_us), "fgds_ior_wait")
        return self._completions(cqes, n)

    def eventfd(self):
        """The completion eventfd, for an event loop: read 8 bytes to clear
        it, then peek()."""
        return check(self._lib.fgds_ior_eventfd(self._ptr()),
                     "fgds_ior_eventfd")

    @property
    def in_flight(self):
        return self._struct.in_flight

    @property
    def entries(self):
        return self._struct.sq_entries

    def close(self):
        """fgds_ior_destroy. Idempotent. REQUIRES: every completion reaped."""
        if self._open:
            self._open = False
            check(self._lib.fgds_ior_destroy(ctypes.byref(self._struct)),
                  "fgds_ior_destroy")

    def _ptr(self):
        if not self._open:
            raise ValueError("the ior is closed")
        return ctypes.byref(self._struct)

    def _cqe_array(self, max):
        count = max if max is not None else self._struct.cq_entries
        if len(self._cqes) < count:
            self._cqes = (_abi.Cqe * count)()
        return self._cqes if len(self._cqes) == count else \
            (_abi.Cqe * count).from_buffer(self._cqes)

    def _completions(self, cqes, n):
        if self._struct.in_flight == 0:
            self._iovs.clear()
        return [Completion(c.result, c.userdata, c.path, c.tag)
                for c in cqes[:n]]


def _file_id(file):
    return file if isinstance(file, int) else file.id
