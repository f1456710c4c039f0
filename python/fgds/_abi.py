"""The C ABI of include/fgds/fgds.h and include/fgds/usrbio.h in ctypes:
structs field for field, constants, and the argument and result types of
every exported function. python/tests/test_abi.py checks each struct's
size and offsets against the C compiler's (tests/abi_layout.c)."""

from ctypes import (POINTER, Structure, c_char, c_char_p, c_int, c_int32,
                    c_int64, c_size_t, c_ssize_t, c_uint, c_uint32, c_uint64,
                    c_void_p)

from . import _library

# ---- fgds.h ---------------------------------------------------------------

GPU_PATH_NONE, GPU_PATH_BOUNCE, GPU_PATH_DIRECT = 0, 1, 2
SRC_PAGE_CACHE, SRC_O_DIRECT, SRC_BUFFERED = 1, 2, 4
DRIVER_PRIMARY_CTX = 1 << 0
DRIVER_NO_PAGE_CACHE = 1 << 1
OP_READ, OP_WRITE, OP_FSYNC = 1, 2, 3


class DriverParams(Structure):
    _fields_ = [("flags", c_uint32), ("device", c_int32),
                ("workers", c_uint32), ("reserved0", c_uint32),
                ("chunk_bytes", c_uint64), ("staging_bytes", c_uint64),
                ("reserved", c_uint64 * 4)]


class DriverInfo(Structure):
    _fields_ = [("device", c_int32), ("dmabuf_supported", c_uint32),
                ("pci_bus_id", c_char * 16), ("path", c_uint32),
                ("workers", c_uint32), ("chunk_bytes", c_uint64),
                ("staging_bytes", c_uint64),
                ("direct_unavailable", c_char * 200),
                ("reserved", c_uint64 * 8)]


class DriverStats(Structure):
    _fields_ = [(name, c_uint64) for name in (
        "ios", "errors", "bytes_read", "bytes_written", "bytes_bounce",
        "bytes_direct", "bytes_page_cache", "bytes_o_direct",
        "bytes_buffered")] + [("reserved", c_uint64 * 7)]


class Io(Structure):
    """struct fgds_io: one direct-API I/O."""
    _fields_ = [("opcode", c_uint32), ("flags", c_uint32), ("fd", c_int32),
                ("reserved0", c_uint32), ("devptr", c_void_p),
                ("size", c_uint64), ("file_offset", c_int64),
                ("buf_offset", c_int64), ("userdata", c_uint64),
                ("result", c_int64), ("path", c_uint32),
                ("source", c_uint32), ("internal", c_void_p),
                ("reserved", c_uint64 * 3)]


# ---- usrbio.h / usrbio_ring.h ----------------------------------------------

PATH_NONE, PATH_DIRECT, PATH_PAGE_CACHE, PATH_BOUNCE = 0, 1, 2, 3
PATH_TCP, PATH_RDMA = 4, 5
SQE_BUFFERED, SQE_DATASYNC = 1, 2
IOR_BUFFERED = 1
IOV_GPU_PRIMARY_CTX = 1


class SessionParams(Structure):
    _fields_ = [("flags", c_uint32), ("reserved", c_uint32 * 7)]


class Session(Structure):
    # pthread_mutex_t is 40 bytes, 8-aligned, on every 64-bit glibc target.
    _fields_ = [("sock", c_int), ("version", c_uint32), ("seq", c_uint32),
                ("last_limit", c_uint32), ("lock", c_uint64 * 5)]


class IovParams(Structure):
    _fields_ = [("size", c_uint64), ("numa_node", c_int32),
                ("flags", c_uint32), ("reserved", c_uint64 * 4)]


class Iov(Structure):
    _fields_ = [("base", c_void_p), ("size", c_uint64), ("id", c_uint32),
                ("memfd", c_int), ("session", POINTER(Session)),
                ("gpu", c_void_p)]


class IovGpuParams(Structure):
    _fields_ = [("staging_bytes", c_uint64), ("chunk_bytes", c_uint32),
                ("flags", c_uint32), ("device", c_int32),
                ("reserved0", c_uint32), ("reserved", c_uint64 * 4)]


class IorParams(Structure):
    _fields_ = [("entries", c_uint32), ("flags", c_uint32),
                ("io_depth", c_uint32), ("timeout_us", c_uint32),
                ("priority", c_int32), ("spin_us", c_uint32),
                ("reserved", c_uint64 * 4)]


class Ior(Structure):
    _fields_ = [("ring", c_void_p), ("sqes", c_void_p), ("cqes", c_void_p),
                ("sq_entries", c_uint32), ("cq_entries", c_uint32),
                ("sq_pending", c_uint32), ("in_flight", c_uint32),
                ("id", c_uint32), ("spin_us", c_uint32),
                ("map_size", c_uint64), ("memfd", c_int),
                ("submit_efd", c_int), ("complete_efd", c_int),
                ("flags", c_uint32), ("session", POINTER(Session)),
                ("gpu", c_void_p)]


class Cqe(Structure):
    _fields_ = [("result", c_int64), ("userdata", c_uint64),
                ("path", c_uint32), ("tag", c_uint32)]


# Every struct the tests compare with C, by its C name.
STRUCTS = {
    "fgds_driver_params": DriverParams, "fgds_driver_info": DriverInfo,
    "fgds_driver_stats": DriverStats, "fgds_io": Io,
    "fgds_session_params": SessionParams, "fgds_session": Session,
    "fgds_iov_params": IovParams, "fgds_iov": Iov,
    "fgds_iov_gpu_params": IovGpuParams, "fgds_ior_params": IorParams,
    "fgds_ior": Ior, "fgds_cqe": Cqe,
}

# ---- functions --------------------------------------------------------------

_DRIVER = c_void_p
_DIRECT_FUNCTIONS = {
    "fgds_driver_open": (c_int, [POINTER(c_void_p), POINTER(DriverParams)]),
    "fgds_driver_close": (c_int, [_DRIVER]),
    "fgds_driver_query": (c_int, [_DRIVER, POINTER(DriverInfo)]),
    "fgds_driver_get_stats": (c_int, [_DRIVER, POINTER(DriverStats)]),
    "fgds_last_error": (c_char_p, []),
    "fgds_buf_register": (c_int, [_DRIVER, c_void_p, c_size_t, c_uint32]),
    "fgds_buf_deregister": (c_int, [_DRIVER, c_void_p]),
    "fgds_file_register": (c_int, [_DRIVER, c_int]),
    "fgds_file_deregister": (c_int, [_DRIVER, c_int]),
    "fgds_pread": (c_ssize_t,
                   [_DRIVER, c_int, c_void_p, c_size_t, c_int64, c_int64]),
    "fgds_pwrite": (c_ssize_t,
                    [_DRIVER, c_int, c_void_p, c_size_t, c_int64, c_int64]),
    "fgds_io_batch": (c_int, [_DRIVER, POINTER(Io), c_uint]),
    "fgds_io_submit": (c_int, [_DRIVER, POINTER(Io), c_uint]),
    "fgds_io_wait": (c_int, [_DRIVER, POINTER(Io), c_int64]),
}

_USRBIO_FUNCTIONS = {
    "fgds_session_open": (c_int, [POINTER(Session), c_char_p,
                                  POINTER(SessionParams)]),
    "fgds_session_close": (None, [POINTER(Session)]),
    "fgds_limit_describe": (c_char_p, [c_uint32]),
    "fgds_iov_create": (c_int, [POINTER(Session), POINTER(Iov),
                                POINTER(IovParams)]),
    "fgds_iov_destroy": (c_int, [POINTER(Iov)]),
    "fgds_iov_wrap_gpu": (c_int, [POINTER(Session), POINTER(Iov), c_uint64,
                                  c_uint64, POINTER(IovGpuParams)]),
    "fgds_iov_gpu_path": (c_int, [POINTER(Iov), POINTER(c_uint32)]),
    "fgds_ior_create": (c_int, [POINTER(Session), POINTER(Ior),
                                POINTER(IorParams)]),
    "fgds_ior_destroy": (c_int, [POINTER(Ior)]),
    "fgds_fd_register": (c_int, [POINTER(Session), c_int, c_uint32]),
    "fgds_fd_unregister": (c_int, [POINTER(Session), c_int]),
    "fgds_prep_io": (c_int, [POINTER(Ior), POINTER(Iov), c_uint32, c_uint32,
                             c_void_p, c_int, c_uint64, c_uint64, c_uint64]),
    "fgds_prep_fsync": (c_int, [POINTER(Ior), c_int, c_uint32, c_uint64]),
    "fgds_ior_submit": (c_int, [POINTER(Ior)]),
    "fgds_ior_peek": (c_int, [POINTER(Ior), POINTER(Cqe), c_uint]),
    "fgds_ior_wait": (c_int, [POINTER(Ior), POINTER(Cqe), c_uint, c_uint,
                              c_int64]),
    "fgds_ior_eventfd": (c_int, [POINTER(Ior)]),
}


def _bind(library, functions):
    for name, (restype, argtypes) in functions.items():
        function = getattr(library, name)
        function.restype = restype
        function.argtypes = argtypes
    return library


def direct():
    """libfgds with its prototypes set (loaded on first call)."""
    return _bound("fgds", _DIRECT_FUNCTIONS)


def usrbio():
    """libfgds_usrbio with its prototypes set (loaded on first call)."""
    return _bound("fgds_usrbio", _USRBIO_FUNCTIONS)


_bound_libraries = {}


def _bound(name, functions):
    library = _bound_libraries.get(name)
    if library is None:
        library = _bind(_library.load(name), functions)
        _bound_libraries[name] = library
    return library


def last_error():
    """libfgds's words for this thread's last failure ("" if none)."""
    text = direct().fgds_last_error()
    return text.decode(errors="replace") if text else ""

