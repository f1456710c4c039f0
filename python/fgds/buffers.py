"""Memory that fgds reads into or writes from, whatever object holds it.

`memory_of(obj)` returns a Memory (address, size, device) for:
  - torch tensors and storages (tensor.untyped_storage()), CPU or CUDA;
  - anything with __cuda_array_interface__ (CuPy, Numba, torch CUDA);
  - anything with __dlpack__ (torch, CuPy, NumPy >= 1.22, JAX);
  - anything with the buffer protocol (NumPy arrays, bytearray, mmap).
The memory must be contiguous: fgds moves one byte range. The Memory keeps
the exporting object (and for the buffer protocol, its Py_buffer) alive, so
the address stays valid while the Memory is referenced.
"""

import ctypes
import math

DEVICE_CPU = "cpu"
DEVICE_CUDA = "cuda"


class Memory:
    """A contiguous byte range: `address`, `nbytes`, and `device`
    ("cpu" or "cuda") with `device_index` (the CUDA ordinal, or None)."""

    __slots__ = ("address", "nbytes", "device", "device_index", "readonly",
                 "_keepalive")

    def __init__(self, address, nbytes, device, device_index=None,
                 readonly=False, keepalive=None):
        self.address = address
        self.nbytes = nbytes
        self.device = device
        self.device_index = device_index
        self.readonly = readonly
        self._keepalive = keepalive

    @property
    def is_cuda(self):
        return self.device == DEVICE_CUDA

    def __repr__(self):
        index = "" if self.device_index is None else f":{self.device_index}"
        return (f"Memory(0x{self.address:x}, {self.nbytes} bytes, "
                f"{self.device}{index})")


def memory_of(obj, writable=False):
    """The Memory of `obj` (see the module's doc). `writable`: the caller
    will write into it (a read from a file); read-only exporters then raise
    BufferError. Raises TypeError for an object that exposes no memory,
    BufferError for non-contiguous memory."""
    if isinstance(obj, Memory):
        return obj
    if _is_torch(obj):
        # Asked directly: torch's __cuda_array_interface__ refuses bfloat16
        # and tensors that require grad, its DLPack export costs a capsule.
        if hasattr(obj, "is_contiguous"):
            return _from_torch_tensor(obj)
        return _from_torch_storage(obj)
    if _has_attribute(obj, "__cuda_array_interface__"):
        return _from_cuda_array_interface(obj, writable)
    if hasattr(obj, "__dlpack__"):
        return _from_dlpack(obj)
    try:
        return _from_buffer_protocol(obj, writable)
    except TypeError:
        raise TypeError(
            f"{type(obj).__name__} exposes no memory: expected a tensor, a "
            "storage, or an object with __cuda_array_interface__, __dlpack__ "
            "or the buffer protocol") from None


def _has_attribute(obj, name):
    # Unlike hasattr, also False when the property itself raises (an
    # exporter that cannot export this particular object).
    try:
        getattr(obj, name)
        return True
    except Exception:  # noqa: BLE001 - any failure means "not this way"
        return False


# ---- torch tensors and storages ----------------------------------------------

def _is_torch(obj):
    return any((cls.__module__ or "").startswith("torch")
               for cls in type(obj).__mro__) and hasattr(obj, "data_ptr")


def _from_torch_tensor(tensor):
    if not tensor.is_contiguous():
        raise BufferError("torch tensor is not contiguous")
    device = tensor.device
    return Memory(tensor.data_ptr(), tensor.numel() * tensor.element_size(),
                  DEVICE_CUDA if device.type == "cuda" else DEVICE_CPU,
                  device.index, keepalive=tensor)


def _from_torch_storage(storage):
    device = storage.device
    return Memory(storage.data_ptr(), storage.nbytes(),
                  DEVICE_CUDA if device.type == "cuda" else DEVICE_CPU,
                  device.index, keepalive=storage)


# ---- __cuda_array_interface__ (numba.cuda docs, version 3) -----------------

def _from_cuda_array_interface(obj, writable):
    interface = obj.__cuda_array_interface__
    address, readonly = interface["data"]
    shape = tuple(interface["shape"])
    itemsize = int(interface["typestr"][2:])
    strides = interface.get("strides")
    if strides is not None and tuple(strides) != _c_strides(shape, itemsize):
        raise BufferError("__cuda_array_interface__: not C-contiguous")
    if readonly and writable:
        raise BufferError("__cuda_array_interface__: read-only memory")
    return Memory(address or 0, math.prod(shape) * itemsize, DEVICE_CUDA,
                  # The interface does not name the device; the C API
                  # finds the allocation from the address itself.
                  None, readonly=bool(readonly), keepalive=obj)


def _c_strides(shape, itemsize):
    strides, step = [], itemsize
    for extent in reversed(shape):
        strides.append(step)
        step *= extent
    return tuple(reversed(strides))


# ---- DLPack (dlpack.h, v0.8 ABI of DLManagedTensor) ------------------------

class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8),
                ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice),
                ("ndim", ctypes.c_int32), ("dtype", _DLDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


_DL_CPU, _DL_CUDA, _DL_CUDA_HOST, _DL_CUDA_MANAGED = 1, 2, 3, 13

_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


def _from_dlpack(obj):
    # The capsule stays unconsumed ("dltensor"), so its destructor frees
    # the DLManagedTensor when the Memory lets go of it: we only borrow.
    capsule = obj.__dlpack__()
    tensor = _DLTensor.from_address(_capsule_pointer(capsule, b"dltensor"))
    shape = [tensor.shape[i] for i in range(tensor.ndim)]
    itemsize = (tensor.dtype.bits * tensor.dtype.lanes + 7) // 8
    if tensor.strides:
        strides = tuple(tensor.strides[i] * itemsize
                        for i in range(tensor.ndim))
        if any(extent > 1 and stride != want for extent, stride, want in zip(
                shape, strides, _c_strides(shape, itemsize))):
            raise BufferError("DLPack tensor is not C-contiguous")
    device_type = tensor.device.device_type
    if device_type in (_DL_CPU, _DL_CUDA_HOST):
        device, index = DEVICE_CPU, None
    elif device_type in (_DL_CUDA, _DL_CUDA_MANAGED):
        device, index = DEVICE_CUDA, tensor.device.device_id
    else:
        raise BufferError(f"DLPack device type {device_type} is neither CPU "
                          "nor CUDA")
    address = (tensor.data or 0) + tensor.byte_offset
    return Memory(address, math.prod(shape) * itemsize, device, index,
                  keepalive=(obj, capsule))


# ---- the buffer protocol (PEP 3118) ----------------------------------------

class _PyBuffer(ctypes.Structure):
    _fields_ = [("buf", ctypes.c_void_p), ("obj", ctypes.c_void_p),
                ("len", ctypes.c_ssize_t), ("itemsize", ctypes.c_ssize_t),
                ("readonly", ctypes.c_int), ("ndim", ctypes.c_int),
                ("format", ctypes.c_char_p),
                ("shape", ctypes.c_void_p), ("strides", ctypes.c_void_p),
                ("suboffsets", ctypes.c_void_p),
                ("internal", ctypes.c_void_p)]


_PyBUF_SIMPLE, _PyBUF_WRITABLE = 0, 1
_get_buffer = ctypes.pythonapi.PyObject_GetBuffer
_get_buffer.argtypes = [ctypes.py_object, ctypes.POINTER(_PyBuffer),
                        ctypes.c_int]
_get_buffer.restype = ctypes.c_int
_release_buffer = ctypes.pythonapi.PyBuffer_Release
_release_buffer.argtypes = [ctypes.POINTER(_PyBuffer)]
_release_buffer.restype = None


class _HeldBuffer:
    """A Py_buffer held until garbage collection, so the exporter keeps
    the memory in place (a bytearray cannot resize meanwhile)."""

    def __init__(self, obj, writable):
        self.view = _PyBuffer()
        flags = _PyBUF_WRITABLE if writable else _PyBUF_SIMPLE
        # PyBUF_SIMPLE asks for one contiguous block: an exporter that
        # cannot give one (or a writable one) raises BufferError, which
        # ctypes.pythonapi passes on.
        _get_buffer(obj, ctypes.byref(self.view), flags)
        self.held = True

    def __del__(self):
        if getattr(self, "held", False):
            _release_buffer(ctypes.byref(self.view))
            self.held = False


def _from_buffer_protocol(obj, writable):
    memoryview(obj)  # TypeError for objects without the protocol
    held = _HeldBuffer(obj, writable)
    return Memory(held.view.buf or 0, held.view.len, DEVICE_CPU,
                  readonly=bool(held.view.readonly), keepalive=held)
