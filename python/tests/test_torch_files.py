"""fgds.torch on CPU tensors: load_file of files written by the format's
rules (by hand here, as the reference writer lays them out, since the
`safetensors` package is not in Debian 12) and by our save_file, every
dtype this torch has, GdsFile, and the error paths. The CUDA side runs in
tests/gpu/python_on_device.sh."""

import json
import os
import struct
import tempfile
import unittest

try:
    import torch
    import fgds.torch as fgds_torch
    from fgds.torch import dtypes
except ImportError:  # torch is missing: the module skips
    torch = None

from fgds import safetensors


def reference_file(path, tensors, metadata=None, pad_to=8):
    """Writes `tensors` ({name: CPU tensor}) the way the format's rules
    say, independently of fgds.safetensors: the JSON with spaces after
    separators, names in sorted order, data back to back in that order,
    the header padded with spaces to `pad_to`."""
    document, offset, blobs = {}, 0, []
    if metadata is not None:
        document["__metadata__"] = metadata
    for name in sorted(tensors):
        tensor = tensors[name].contiguous()
        raw = _raw_bytes(tensor)
        shape = list(tensor.shape)
        if getattr(torch, "float4_e2m1fn_x2", None) == tensor.dtype:
            shape[-1] *= 2
        document[name] = {"dtype": dtypes.from_torch(tensor.dtype),
                          "shape": shape,
                          "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(document).encode()
    text += b" " * (-len(text) % pad_to)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def _raw_bytes(tensor):
    # Through a uint8 view of the same memory: numpy has no bfloat16.
    flat = tensor.reshape(-1)
    if flat.numel() == 0:
        return b""
    return bytes(flat.view(torch.uint8).numpy()) if tensor.dtype != \
        torch.bool else bytes(flat.to(torch.uint8).numpy())


def sample_tensors():
    """One tensor of every safetensors dtype this torch has, with shapes
    of 0, 1 and more dimensions and one empty tensor."""
    generator = torch.Generator().manual_seed(15)
    result = {}
    for name in safetensors.DTYPE_BITS:
        try:
            dtype = dtypes.to_torch(name)
        except ValueError:
            continue
        shape = dtypes.torch_shape(name, [3, 6])
        raw = torch.randint(0, 256, (shape[0], shape[1] *
                                     dtypes.element_bytes(name)),
                            generator=generator, dtype=torch.uint8)
        if dtype == torch.bool:
            result[f"t_{name}"] = raw[:, :shape[1]] % 2 == 1
        else:
            result[f"t_{name}"] = raw.view(dtype)
    result["scalar"] = torch.tensor(2.5, dtype=torch.float64)
    result["empty"] = torch.empty(0, 4, dtype=torch.float32)
    result["vector"] = torch.arange(1000, dtype=torch.int32)
    return result


def same(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and \
        _raw_bytes(a) == _raw_bytes(b)


@unittest.skipIf(torch is None, "needs torch (python3-torch)")
class TorchFilesTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)

    def path(self, name):
        return os.path.join(self.dir.name, name)

    def test_load_reference_file_every_dtype(self):
        tensors = sample_tensors()
        for pad in (1, 8):  # unaligned data start too
            with self.subTest(pad=pad):
                reference_file(self.path("ref"), tensors, {"format": "pt"},
                               pad_to=pad)
                loaded = fgds_torch.load_file(self.path("ref"))
                self.assertEqual(set(loaded), set(tensors))
                for name, tensor in tensors.items():
                    self.assertTrue(same(loaded[name], tensor), name)
                    self.assertEqual(loaded[name].device.type, "cpu")

    def test_save_then_load_and_layout(self):
        tensors = sample_tensors()
        tensors["strided"] = torch.arange(20.0).reshape(4, 5)[:, ::2]
        fgds_torch.save_file(tensors, self.path("ours"), {"k": "v"})
        loaded = fgds_torch.load_file(self.path("ours"), device="cpu")
        for name, tensor in tensors.items():
            self.assertTrue(same(loaded[name], tensor.contiguous()), name)
        fd = os.open(self.path("ours"), os.O_RDONLY)
        try:
            header = safetensors.read_header(fd, os.fstat(fd).st_size)
        finally:
            os.close(fd)
        self.assertEqual(header.metadata, {"k": "v"})
        self.assertEqual(header.data_start % 8, 0)
        for info in header.tensors.values():  # every tensor aligned
            size = loaded[info.name].element_size()
            self.assertEqual((header.data_start + info.begin) % size, 0)

    def test_large_tensor_spans_many_pieces(self):
        big = {"big": torch.randn((40 << 20) // 4 + 3)}  # 40 MiB and a bit
        fgds_torch.save_file(big, self.path("big"))
        self.assertTrue(torch.equal(
            fgds_torch.load_file(self.path("big"))["big"], big["big"]))

    def test_load_refuses_bad_files(self):
        with open(self.path("bad"), "wb") as f:
            f.write(struct.pack("<Q", 2) + b"{}" + b"extra")
        with self.assertRaises(safetensors.HeaderError):
            fgds_torch.load_file(self.path("bad"))
        with self.assertRaises(FileNotFoundError):
            fgds_torch.load_file(self.path("missing"))

    def test_save_refuses_unknown_dtypes_and_reserved_names(self):
        with self.assertRaises(ValueError):
            fgds_torch.save_file({"c": torch.zeros(2, dtype=torch.complex128)},
                                 self.path("c"))
        with self.assertRaises(ValueError):
            fgds_torch.save_file({"__metadata__": torch.zeros(1)},
                                 self.path("m"))

    def test_empty_file_of_no_tensors(self):
        fgds_torch.save_file({}, self.path("none"))
        self.assertEqual(fgds_torch.load_file(self.path("none")), {})

    def test_gds_file_round_trips_cpu_storages(self):
        src1, src2 = torch.randn(1024), torch.randn(2, 1024)
        f = fgds_torch.GdsFile(self.path("gds"), os.O_CREAT | os.O_RDWR)
        f.save_storage(_storage(src1), offset=0)
        f.save_storage(_storage(src2), offset=4096)
        dst1, dst2 = torch.empty(1024), torch.empty(2, 1024)
        f.load_storage(_storage(dst1), offset=0)
        f.load_storage(_storage(dst2), 4096)
        self.assertTrue(torch.equal(src1, dst1))
        self.assertTrue(torch.equal(src2, dst2))
        with self.assertRaises(EOFError):
            f.load_storage(_storage(torch.empty(10)), offset=3 * 4096)
        f.deregister_handle()
        with self.assertRaises(AssertionError):
            f.deregister_handle()
        with self.assertRaises(AssertionError):
            f.load_storage(_storage(dst1))
        f.register_handle()
        with self.assertRaises(AssertionError):
            f.register_handle()
        del f

    def test_gds_file_open_errors_and_buffer_registration(self):
        with self.assertRaises(FileNotFoundError):
            fgds_torch.GdsFile(self.path("absent"), os.O_RDONLY)
        with self.assertRaises(ValueError):  # gds buffers are CUDA memory
            fgds_torch.gds_register_buffer(_storage(torch.zeros(4)))

    @unittest.skipIf(torch is not None and torch.cuda.is_available(),
                     "a GPU is here: the CUDA path is tested instead")
    def test_cuda_without_gpu_fails_cleanly(self):
        reference_file(self.path("ref"), {"x": torch.zeros(4)})
        with self.assertRaises((RuntimeError, AssertionError, OSError)):
            fgds_torch.load_file(self.path("ref"), device="cuda")


def _storage(tensor):
    # untyped_storage() since torch 2.0; storage() before.
    if hasattr(tensor, "untyped_storage"):
        return tensor.untyped_storage()
    return tensor.storage()


if __name__ == "__main__":
    unittest.main()
