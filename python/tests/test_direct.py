"""fgds.Driver (libfgds): without a GPU, opening fails with ENODEV and the
library's reason, and the Python layer (arguments handed to C, futures,
close, errors) runs against a fake libfgds; with a GPU, pread/pwrite and
async round trips on torch CUDA tensors (the device script covers more)."""

import ctypes
import errno
import os
import tempfile
import unittest
from unittest import mock

import fgds
from fgds import _abi

try:
    import torch
except ImportError:
    torch = None

HAVE_GPU = torch is not None and torch.cuda.is_available()


@unittest.skipIf(HAVE_GPU, "a GPU is here: DriverOnGpuTest runs instead")
class DriverWithoutGpuTest(unittest.TestCase):
    def test_open_fails_with_enodev_and_says_why(self):
        for kwargs in ({}, {"device": 0}, {"workers": 2, "page_cache": False}):
            with self.subTest(**kwargs):
                with self.assertRaises(OSError) as raised:
                    fgds.Driver(**kwargs)
                self.assertEqual(raised.exception.errno, errno.ENODEV)
                self.assertIn("fgds_driver_open", str(raised.exception))
                self.assertIn("libcuda", str(raised.exception))


class FakeDirectLibrary:
    """libfgds's functions as the Python layer calls them: records each
    call, answers from `results` (name -> list of return values, default
    0), and completes an I/O with the next of `results["io"]`, or else its
    size; a first wait with a timeout says -ETIME (still running)."""

    def __init__(self, results=None):
        self.calls = []
        self.results = results or {}
        self.waits = {}
        self.io_results = self.results.pop("io", [])

    def __getattr__(self, name):
        def function(*args):
            self.calls.append((name, args))
            if name == "fgds_last_error":
                return b"the fake says why"
            if name == "fgds_io_wait":
                return self._wait(args[1]._obj, args[2])
            queued = self.results.get(name)
            return queued.pop(0) if queued else 0
        return function

    def _wait(self, io, timeout_us):
        count = self.waits.get(ctypes.addressof(io), 0) + 1
        self.waits[ctypes.addressof(io)] = count
        if count == 1 and timeout_us != -1:
            return -errno.ETIME
        io.result = self.io_results.pop(0) if self.io_results else io.size
        io.path = fgds.GPU_PATH_BOUNCE
        return 0


class DriverLogicTest(unittest.TestCase):
    def driver(self, **results):
        self.lib = FakeDirectLibrary(results)
        patcher = mock.patch.object(_abi, "direct", return_value=self.lib)
        patcher.start()
        self.addCleanup(patcher.stop)
        return fgds.Driver(device=3, workers=2, page_cache=False)

    def calls(self, name):
        return [args for call, args in self.lib.calls if call == name]

    def test_params_reach_the_library(self):
        driver = self.driver()
        (handle_ref, params_ref), = self.calls("fgds_driver_open")
        params = params_ref._obj
        self.assertEqual((params.device, params.workers), (3, 2))
        self.assertEqual(params.flags, _abi.DRIVER_PRIMARY_CTX |
                         _abi.DRIVER_NO_PAGE_CACHE)
        driver.close()
        driver.close()  # idempotent
        self.assertEqual(len(self.calls("fgds_driver_close")), 1)
        with self.assertRaises(ValueError):
            driver.stats()

    def test_pread_sizes_and_offsets(self):
        driver = self.driver(fgds_pread=[100])
        buffer = fgds.Memory(0x10000, 4096, "cuda", 0)
        self.assertEqual(driver.pread(7, buffer, file_offset=5,
                                      buf_offset=96), 100)
        (_, fd, address, size, file_offset, buf_offset), = \
            self.calls("fgds_pread")
        self.assertEqual((fd, address, size, file_offset, buf_offset),
                         (7, 0x10000, 4000, 5, 96))
        with self.assertRaises(ValueError):  # past the buffer's end
            driver.pread(7, buffer, size=4000, buf_offset=97)
        with self.assertRaises(ValueError):
            driver.pwrite(7, buffer, buf_offset=-1)

    def test_errors_carry_errno_and_the_librarys_words(self):
        driver = self.driver(fgds_pwrite=[-errno.EBADF],
                             fgds_buf_register=[-errno.EEXIST])
        buffer = fgds.Memory(0x10000, 4096, "cuda", 0)
        with self.assertRaises(OSError) as raised:
            driver.pwrite(9, buffer)
        self.assertEqual(raised.exception.errno, errno.EBADF)
        self.assertIn("the fake says why", str(raised.exception))
        with self.assertRaises(OSError) as raised:
            driver.register_buffer(buffer)
        self.assertEqual(raised.exception.errno, errno.EEXIST)

    def test_futures_wait_time_out_and_report(self):
        driver = self.driver()
        buffer = fgds.Memory(0x20000, 8192, "cuda", 0)
        read, write = driver.submit([
            (fgds.OP_READ, 4, buffer, 4096, 0, 0),
            (fgds.OP_WRITE, 4, buffer, None, 8192, 4096)])
        (_, ios, count), = self.calls("fgds_io_submit")
        self.assertEqual(count, 2)
        self.assertEqual((ios[1].opcode, ios[1].size, ios[1].buf_offset),
                         (fgds.OP_WRITE, 4096, 4096))
        self.assertFalse(read.done())          # -ETIME: still running
        self.assertIsNone(read.path)
        self.assertEqual(read.result(), 4096)  # waits until complete
        self.assertEqual(read.path, fgds.GPU_PATH_BOUNCE)
        with self.assertRaises(TimeoutError):
            write.result(timeout=0)
        driver.close()                          # waits for `write`
        self.assertTrue(write.done())
        self.assertEqual(driver.submit([]), [])

    def test_failed_io_raises_from_result(self):
        driver = self.driver(io=[-errno.EIO])
        future = driver.read_async(4, fgds.Memory(0x30000, 64, "cuda", 0))
        with self.assertRaises(OSError) as raised:
            future.result()
        self.assertEqual(raised.exception.errno, errno.EIO)
        driver.close()

    def test_query_and_stats_as_dicts(self):
        driver = self.driver()
        info, stats = driver.query(), driver.stats()
        self.assertEqual(info["pci_bus_id"], "")
        self.assertNotIn("reserved", info)
        self.assertEqual(stats["ios"], 0)
        driver.register_file(5)
        driver.deregister_file(5)
        self.assertEqual(self.calls("fgds_file_register")[0][1], 5)


@unittest.skipUnless(HAVE_GPU, "needs a CUDA GPU and torch")
class DriverOnGpuTest(unittest.TestCase):
    def setUp(self):
        self.driver = fgds.Driver(device=torch.cuda.current_device())
        self.addCleanup(self.driver.close)
        fd, self.path = tempfile.mkstemp()
        os.close(fd)
        self.addCleanup(os.unlink, self.path)

    def test_sync_and_async_round_trip(self):
        src = torch.randint(0, 255, (3 << 20,), dtype=torch.uint8,
                            device="cuda")
        fd = os.open(self.path, os.O_RDWR)
        try:
            self.driver.register_file(fd)
            torch.cuda.synchronize()
            self.assertEqual(self.driver.pwrite(fd, src), src.numel())
            dst = torch.empty_like(src)
            self.driver.register_buffer(dst)
            futures = [self.driver.read_async(fd, dst, 1 << 20,
                                              file_offset=i << 20,
                                              buf_offset=i << 20)
                       for i in range(3)]
            self.assertEqual([f.result() for f in futures], [1 << 20] * 3)
            self.assertTrue(torch.equal(src, dst))
            self.driver.deregister_buffer(dst)
            self.driver.deregister_file(fd)
            stats = self.driver.stats()
            self.assertEqual(stats["bytes_read"], src.numel())
            self.assertIn(self.driver.query()["path"],
                          (fgds.GPU_PATH_BOUNCE, fgds.GPU_PATH_DIRECT))
        finally:
            os.close(fd)

    def test_errors(self):
        dst = torch.empty(4096, dtype=torch.uint8, device="cuda")
        with self.assertRaises(OSError) as raised:
            self.driver.pread(987654, dst)
        self.assertEqual(raised.exception.errno, errno.EBADF)
        with self.assertRaises(OSError) as raised:
            self.driver.deregister_buffer(dst)
        self.assertEqual(raised.exception.errno, errno.ENOENT)
        with self.assertRaises(ValueError):
            self.driver.pread(0, dst, size=8192)


if __name__ == "__main__":
    unittest.main()
