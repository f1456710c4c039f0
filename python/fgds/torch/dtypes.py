"""safetensors dtype names <-> torch dtypes. A torch build that lacks a
dtype (older releases have no unsigned 16/32/64-bit or float8 types; none
has the 6-bit floats) raises ValueError for tensors of it, naming it."""

import torch

# safetensors name -> torch attribute name
_TORCH_NAMES = {
    "BOOL": "bool", "U8": "uint8", "I8": "int8",
    "F8_E5M2": "float8_e5m2", "F8_E4M3": "float8_e4m3fn",
    "F8_E8M0": "float8_e8m0fnu", "F4": "float4_e2m1fn_x2",
    "I16": "int16", "U16": "uint16", "F16": "float16", "BF16": "bfloat16",
    "I32": "int32", "U32": "uint32", "F32": "float32", "C64": "complex64",
    "I64": "int64", "U64": "uint64", "F64": "float64",
}

# F4 packs two values per byte: torch's float4_e2m1fn_x2 tensor has half as
# many elements in its last dimension as the safetensors shape counts.
PACKED_PAIRS = "F4"


def to_torch(name):
    attribute = _TORCH_NAMES.get(name)
    dtype = getattr(torch, attribute, None) if attribute else None
    if dtype is None:
        raise ValueError(f"safetensors dtype {name} has no torch dtype in "
                         f"torch {torch.__version__}")
    return dtype


def from_torch(dtype):
    for name, attribute in _TORCH_NAMES.items():
        if getattr(torch, attribute, None) == dtype:
            return name
    raise ValueError(f"torch dtype {dtype} has no safetensors dtype")


def element_bytes(name):
    """Bytes per torch element of safetensors dtype `name` (F4: one byte
    holds a pair). Needs no tensor, so it works for dtypes torch can only
    view, not create."""
    from ..safetensors import DTYPE_BITS
    pairs = 2 if name == PACKED_PAIRS else 1
    return DTYPE_BITS[name] * pairs // 8


def torch_shape(name, shape):
    """The torch tensor shape holding a safetensors tensor of `shape`."""
    if name != PACKED_PAIRS:
        return list(shape)
    if not shape or shape[-1] % 2:
        raise ValueError(f"F4 tensor of shape {list(shape)}: the last "
                         "dimension must be even (two values per byte)")
    return list(shape[:-1]) + [shape[-1] // 2]


def safetensors_shape(name, shape):
    """The safetensors shape of a torch tensor of `shape` (inverse)."""
    shape = list(shape)
    if name == PACKED_PAIRS:
        shape[-1] *= 2
    return shape
