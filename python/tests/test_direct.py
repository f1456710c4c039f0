"""fgds.Driver (libfgds): without a GPU every call path ends in ENODEV
with the library's reason, and bad arguments are refused before the C
call; with one, pread/pwrite/async round trips on CuPy-free torch CUDA
tensors (the device script covers more)."""

import errno
import os
import tempfile
import unittest

import fgds

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
