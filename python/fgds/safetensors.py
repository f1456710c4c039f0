"""The safetensors file format, without torch: parse and validate a header
(untrusted input), and build one.

    8 bytes   N, the header's length (unsigned little-endian)
    N bytes   JSON: {"name": {"dtype": "F16", "shape": [2, 3],
                     "data_offsets": [begin, end]}, ...,
                     "__metadata__": {"key": "value"}}
              (UTF-8, may end in spaces)
    the rest  the data; each tensor's bytes at [begin, end) of it,
              little-endian, row-major

Validation follows the reference implementation's rules (huggingface
safetensors, lib.rs `Metadata::validate`): the header fits the file and is
at most 100 MB, one JSON object with no duplicate names, known dtypes,
non-negative integer shapes, each tensor's byte count equal to its shape's
element count times its dtype's size, and the tensors, sorted by offset,
tile the data exactly: no gap, no overlap, nothing left over.
"""

import json
import math
import os
import struct

MAX_HEADER_BYTES = 100_000_000
METADATA_KEY = "__metadata__"

# Bits per element of every safetensors dtype (safetensors' Dtype enum).
DTYPE_BITS = {
    "BOOL": 8, "U8": 8, "I8": 8, "F8_E5M2": 8, "F8_E4M3": 8, "F8_E8M0": 8,
    "F4": 4, "F6_E2M3": 6, "F6_E3M2": 6,
    "I16": 16, "U16": 16, "F16": 16, "BF16": 16,
    "I32": 32, "U32": 32, "F32": 32, "C64": 64,
    "I64": 64, "U64": 64, "F64": 64,
}


class HeaderError(ValueError):
    """The file is not a valid safetensors file; the message says why."""


class TensorInfo:
    """One tensor of a header: dtype name, shape (a tuple), and its byte
    range [begin, end) relative to the start of the data."""

    __slots__ = ("name", "dtype", "shape", "begin", "end")

    def __init__(self, name, dtype, shape, begin, end):
        self.name, self.dtype, self.shape = name, dtype, tuple(shape)
        self.begin, self.end = begin, end

    @property
    def nbytes(self):
        return self.end - self.begin

    def __repr__(self):
        return (f"TensorInfo({self.name!r}, {self.dtype}, {self.shape}, "
                f"[{self.begin}, {self.end}))")


class Header:
    """A validated header: `tensors` (name -> TensorInfo, in file order),
    `metadata` (str -> str), and `data_start`, the file offset of the
    data (8 + N)."""

    def __init__(self, tensors, metadata, data_start):
        self.tensors = tensors
        self.metadata = metadata
        self.data_start = data_start


def read_header(fd, file_size):
    """Reads and validates the header of the open file `fd` whose size is
    `file_size`. Raises HeaderError, or OSError for a failing read."""
    prefix = _pread_exact(fd, 8, 0, "the header length")
    (length,) = struct.unpack("<Q", prefix)
    _check_length(length, file_size)
    header_bytes = _pread_exact(fd, length, 8, "the header")
    return parse_header(header_bytes, file_size - 8 - length)


def parse_header(header_bytes, data_bytes):
    """Validates the JSON header `header_bytes` for a file whose data part
    holds `data_bytes` bytes; returns a Header."""
    try:
        text = header_bytes.decode("utf-8")
    except UnicodeDecodeError as error:
        raise HeaderError(f"header is not UTF-8: {error}") from None
    if not text.startswith("{"):
        raise HeaderError("header does not start with '{'")
    try:
        document = json.loads(text, object_pairs_hook=_no_duplicates,
                              parse_constant=_no_constant)
    except (json.JSONDecodeError, RecursionError) as error:
        raise HeaderError(f"header is not JSON: {error}") from None
    if not isinstance(document, dict):
        raise HeaderError("header is not a JSON object")
    metadata = document.pop(METADATA_KEY, {})
    if metadata is None:
        metadata = {}
    if not isinstance(metadata, dict) or not all(
            isinstance(v, str) for v in metadata.values()):
        raise HeaderError("__metadata__ is not an object of strings")
    tensors = {}
    for name, entry in document.items():
        tensors[name] = _tensor_info(name, entry)
    _check_tiling(tensors.values(), data_bytes)
    ordered = dict(sorted(tensors.items(), key=lambda kv: kv[1].begin))
    return Header(ordered, metadata, 8 + len(header_bytes))


def build_header(entries, metadata=None):
    """Builds a header for tensors laid out back to back in the order
    given. `entries` is a list of (name, dtype, shape); returns (bytes of
    the whole prefix: length + JSON padded with spaces to a multiple of 8,
    list of TensorInfo with their offsets)."""
    document, infos, offset = {}, [], 0
    if metadata:
        if not all(isinstance(k, str) and isinstance(v, str)
                   for k, v in metadata.items()):
            raise ValueError("metadata must map str to str")
        document[METADATA_KEY] = dict(metadata)
    for name, dtype, shape in entries:
        if name == METADATA_KEY or name in document:
            raise ValueError(f"tensor name {name!r} is reserved or repeated")
        nbytes = _byte_count(name, dtype, shape)
        info = TensorInfo(name, dtype, shape, offset, offset + nbytes)
        document[name] = {"dtype": dtype, "shape": list(info.shape),
                          "data_offsets": [info.begin, info.end]}
        infos.append(info)
        offset += nbytes
    text = json.dumps(document, separators=(",", ":")).encode()
    # The data then starts 8-aligned, so every tensor of an aligned layout
    # (largest elements first) is aligned in the file, as the reference
    # writer does.
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text, infos


# ---- validation ---------------------------------------------------------

def _check_length(length, file_size):
    if file_size < 8:
        raise HeaderError(f"file of {file_size} bytes has no header length")
    if length > MAX_HEADER_BYTES:
        raise HeaderError(f"header length {length} exceeds "
                          f"{MAX_HEADER_BYTES}")
    if 8 + length > file_size:
        raise HeaderError(f"header length {length} runs past the end of a "
                          f"{file_size}-byte file")


def _tensor_info(name, entry):
    if not isinstance(entry, dict) or set(entry) != {"dtype", "shape",
                                                     "data_offsets"}:
        raise HeaderError(f"tensor {name!r}: want exactly dtype, shape and "
                          "data_offsets")
    dtype, shape, offsets = entry["dtype"], entry["shape"], \
        entry["data_offsets"]
    if not isinstance(dtype, str) or dtype not in DTYPE_BITS:
        raise HeaderError(f"tensor {name!r}: unknown dtype {dtype!r}")
    if not isinstance(shape, list) or not all(_is_count(d) for d in shape):
        raise HeaderError(f"tensor {name!r}: shape {shape!r} is not a list "
                          "of non-negative integers")
    if (not isinstance(offsets, list) or len(offsets) != 2 or
            not all(_is_count(o) for o in offsets) or
            offsets[0] > offsets[1]):
        raise HeaderError(f"tensor {name!r}: bad data_offsets {offsets!r}")
    info = TensorInfo(name, dtype, shape, offsets[0], offsets[1])
    try:
        want = _byte_count(name, dtype, shape)
    except ValueError as error:
        raise HeaderError(str(error)) from None
    if info.nbytes != want:
        raise HeaderError(f"tensor {name!r}: {info.nbytes} bytes for "
                          f"{dtype}{list(shape)}, which needs {want}")
    return info


def _check_tiling(infos, data_bytes):
    position = 0
    for info in sorted(infos, key=lambda i: (i.begin, i.end)):
        if info.begin != position:
            what = "overlaps the tensor before" if info.begin < position \
                else f"leaves a gap at data byte {position}"
            raise HeaderError(f"tensor {info.name!r} at [{info.begin}, "
                              f"{info.end}) {what}")
        position = info.end
    if position != data_bytes:
        raise HeaderError(f"tensors cover {position} bytes of data, the "
                          f"file holds {data_bytes}")


def _byte_count(name, dtype, shape):
    if dtype not in DTYPE_BITS:
        raise ValueError(f"tensor {name!r}: unknown dtype {dtype!r}")
    bits = math.prod(shape) * DTYPE_BITS[dtype]
    if bits % 8:
        raise ValueError(f"tensor {name!r}: {dtype}{list(shape)} is not a "
                         "whole number of bytes")
    return bits // 8


def _is_count(value):
    # bool is an int in Python; JSON true is not a dimension.
    return isinstance(value, int) and not isinstance(value, bool) and \
        value >= 0


def _no_duplicates(pairs):
    result = {}
    for key, value in pairs:
        if key in result:
            raise HeaderError(f"name {key!r} appears twice in the header")
        result[key] = value
    return result


def _no_constant(name):
    raise HeaderError(f"header holds {name}, which is not JSON")


def _pread_exact(fd, size, offset, what):
    data = os.pread(fd, size, offset)
    if len(data) != size:
        raise HeaderError(f"file ends inside {what}")
    return data
