"""fgds.memory_of: every way an object can hand over its memory, and the
refusals (non-contiguous, read-only for a read, no memory at all)."""

import ctypes
import mmap
import unittest

import fgds

try:
    import numpy
except ImportError:
    numpy = None
try:
    import torch
except ImportError:
    torch = None


class FakeCudaArray:
    """An exporter of __cuda_array_interface__ (as CuPy's arrays are)."""

    def __init__(self, address, shape, typestr="<f4", strides=None,
                 readonly=False):
        self.__cuda_array_interface__ = {
            "data": (address, readonly), "shape": shape, "typestr": typestr,
            "strides": strides, "version": 3}


class BufferProtocolTest(unittest.TestCase):
    def test_bytearray_and_mmap(self):
        data = bytearray(b"0123456789")
        memory = fgds.memory_of(data, writable=True)
        self.assertEqual((memory.nbytes, memory.device, memory.readonly),
                         (10, "cpu", False))
        self.assertEqual(ctypes.string_at(memory.address, 10), b"0123456789")
        with mmap.mmap(-1, 8192) as mapped:
            memory = fgds.memory_of(mapped, writable=True)
            self.assertEqual(memory.nbytes, 8192)
            del memory  # releases the buffer, so the mmap may close

    def test_read_only_buffer_is_fine_to_write_from_not_to_read_into(self):
        memory = fgds.memory_of(b"abc")
        self.assertTrue(memory.readonly)
        with self.assertRaises(BufferError):
            fgds.memory_of(b"abc", writable=True)

    def test_objects_without_memory(self):
        for obj in (3, "text", None, [1, 2]):
            with self.assertRaises(TypeError):
                fgds.memory_of(obj)

    def test_memory_passes_through(self):
        memory = fgds.memory_of(bytearray(4))
        self.assertIs(fgds.memory_of(memory), memory)


class CudaArrayInterfaceTest(unittest.TestCase):
    def test_contiguous_array(self):
        memory = fgds.memory_of(FakeCudaArray(0x7000, (4, 8)))
        self.assertEqual((memory.address, memory.nbytes, memory.device),
                         (0x7000, 128, "cuda"))
        memory = fgds.memory_of(FakeCudaArray(0x7000, (4, 8), "<f8",
                                              strides=(64, 8)))
        self.assertEqual(memory.nbytes, 256)

    def test_property_that_raises_is_no_interface(self):
        class Refuses:
            @property
            def __cuda_array_interface__(self):
                raise TypeError("cannot export this one")

        with self.assertRaises(TypeError):
            fgds.memory_of(Refuses())

    def test_refusals(self):
        with self.assertRaises(BufferError):
            fgds.memory_of(FakeCudaArray(0x7000, (4, 8), strides=(64, 8)))
        with self.assertRaises(BufferError):
            fgds.memory_of(FakeCudaArray(0x7000, (4,), readonly=True),
                           writable=True)


@unittest.skipIf(numpy is None, "needs numpy (python3-numpy)")
class NumpyTest(unittest.TestCase):
    def test_array_address_and_size(self):
        array = numpy.arange(12, dtype=numpy.float64).reshape(3, 4)
        memory = fgds.memory_of(array, writable=True)
        self.assertEqual((memory.address, memory.nbytes),
                         (array.ctypes.data, 96))
        view = fgds.memory_of(array[1:])
        self.assertEqual((view.address, view.nbytes),
                         (array.ctypes.data + 32, 64))

    def test_non_contiguous_is_refused(self):
        with self.assertRaises(BufferError):
            fgds.memory_of(numpy.zeros((4, 4))[:, ::2])


@unittest.skipIf(torch is None, "needs torch (python3-torch)")
class TorchTest(unittest.TestCase):
    def test_tensor_and_storage(self):
        tensor = torch.arange(10, dtype=torch.int16)
        memory = fgds.memory_of(tensor)
        self.assertEqual((memory.address, memory.nbytes, memory.device),
                         (tensor.data_ptr(), 20, "cpu"))
        storage = tensor.untyped_storage() if hasattr(
            tensor, "untyped_storage") else tensor.storage()
        self.assertEqual(fgds.memory_of(storage).nbytes, 20)
        self.assertEqual(fgds.memory_of(tensor[2:]).address,
                         tensor.data_ptr() + 4)

    def test_bfloat16_and_scalars(self):
        self.assertEqual(fgds.memory_of(torch.zeros(3, 3,
                                                    dtype=torch.bfloat16))
                         .nbytes, 18)
        self.assertEqual(fgds.memory_of(torch.tensor(1.0)).nbytes, 4)

    def test_tensors_torch_will_not_export_elsewhere(self):
        # bfloat16 has no __cuda_array_interface__ typestr, and a tensor
        # that requires grad refuses the interfaces: neither matters here.
        weight = torch.nn.Parameter(torch.zeros(8, dtype=torch.bfloat16))
        memory = fgds.memory_of(weight)
        self.assertEqual((memory.address, memory.nbytes),
                         (weight.data_ptr(), 16))

    def test_non_contiguous_tensor_is_refused(self):
        with self.assertRaises(BufferError):
            fgds.memory_of(torch.zeros(4, 4).t())


if __name__ == "__main__":
    unittest.main()
