"""fgds.Session and friends on a real mount: every call, its error paths,
host iovs read and written, GPU iovs where a GPU is."""

import errno
import os
import select
import unittest

import fgds
from mounted_fgds import MountedFgds, skip_reason

try:
    import torch
except ImportError:
    torch = None

HAVE_GPU = torch is not None and torch.cuda.is_available()

SIZE = 1 << 20


def setUpModule():
    reason = skip_reason()
    if reason:
        raise unittest.SkipTest(reason)
    global mount
    mount = MountedFgds()


def tearDownModule():
    mount.close()


class UsrbioTest(unittest.TestCase):
    def setUp(self):
        self.data = os.urandom(SIZE)
        self.path = mount.path(self.id().rsplit(".", 1)[1])
        with open(self.path, "wb") as f:
            f.write(self.data)
        self.session = fgds.Session(mount.mountpoint)
        self.addCleanup(self.session.close)

    def test_read_whole_file_in_aligned_and_unaligned_pieces(self):
        with self.session.create_iov(SIZE) as iov, \
                self.session.create_ior(entries=16) as ior, \
                self.session.open(self.path) as f:
            self.assertGreaterEqual(iov.size, SIZE)
            # 4 KiB-aligned pieces go O_DIRECT, odd ones buffered.
            pieces = [(0, 4096), (4096, 65536), (69632, 12345),
                      (81977, SIZE - 81977)]
            for i, (offset, length) in enumerate(pieces):
                ior.prep_read(iov, offset, f, offset, length, userdata=i)
            self.assertEqual(ior.submit(), len(pieces))
            done = []
            while len(done) < len(pieces):
                done += ior.wait(min=1)
            for c in done:
                self.assertEqual(c.check(), pieces[c.userdata][1])
                self.assertIn(c.path, (fgds.PATH_DIRECT,
                                       fgds.PATH_PAGE_CACHE))
            self.assertEqual(bytes(iov.buffer[:SIZE]), self.data)
            self.assertEqual(ior.in_flight, 0)

    def test_write_then_fsync_then_read_back(self):
        payload = os.urandom(8192)
        with self.session.create_iov(8192) as iov, \
                self.session.create_ior() as ior, \
                self.session.open(self.path, os.O_RDWR) as f:
            iov.buffer[:8192] = payload
            ior.prep_write(iov, 0, f, 4096, 8192, userdata=1)
            ior.submit()
            (c,) = ior.wait()
            self.assertEqual((c.check(), c.userdata), (8192, 1))
            ior.prep_fsync(f, datasync=True, userdata=2)
            ior.submit()
            (c,) = ior.wait()
            self.assertEqual((c.result, c.userdata, c.path),
                             (0, 2, fgds.PATH_NONE))
        with open(self.path, "rb") as check:
            self.assertEqual(check.read()[4096:12288], payload)

    def test_short_read_at_end_of_file_and_peek(self):
        with self.session.create_iov(8192) as iov, \
                self.session.create_ior() as ior, \
                self.session.open(self.path) as f:
            self.assertEqual(ior.peek(), [])
            ior.prep_read(iov, 0, f.id, SIZE - 100, 8192, buffered=True)
            ior.submit()
            completions = ior.wait(min=1, timeout=10)
            self.assertEqual(completions[0].check(), 100)
            self.assertEqual(completions[0].path, fgds.PATH_PAGE_CACHE)

    def test_entry_errors_arrive_in_completions(self):
        with self.session.create_iov(4096) as iov, \
                self.session.create_ior() as ior, \
                self.session.open(self.path) as read_only:
            ior.prep_write(iov, 0, read_only, 0, 4096)
            ior.submit()
            (c,) = ior.wait()
            self.assertEqual(c.result, -errno.EACCES)
            with self.assertRaises(OSError) as raised:
                c.check()
            self.assertEqual(raised.exception.errno, errno.EACCES)

    def test_call_errors_raise_oserror_with_errno(self):
        cases = {
            "iov of 0 bytes": (errno.EINVAL,
                               lambda: self.session.create_iov(0)),
            "ior with unknown size": (errno.EINVAL,
                                      lambda: self.session.create_ior(
                                          entries=1 << 20)),
            "register a non-mount file": (errno.EBADF, self._register_tmp),
            "unregister an unknown id": (
                errno.ENOENT,
                lambda: fgds.RegisteredFile(self.session, 4242).close()),
        }
        for name, (want, call) in cases.items():
            with self.subTest(name):
                with self.assertRaises(OSError) as raised:
                    call()
                self.assertEqual(raised.exception.errno, want)
        with self.session.create_iov(4096) as iov, \
                self.session.create_ior(entries=1) as ior, \
                self.session.open(self.path) as f:
            with self.assertRaises(OSError) as raised:  # past the iov's end
                ior.prep_read(iov, 4096, f, 0, 4096)
            self.assertEqual(raised.exception.errno, errno.EINVAL)
            ior.prep_read(iov, 0, f, 0, 4096)
            with self.assertRaises(OSError) as raised:  # ring full
                ior.prep_read(iov, 0, f, 0, 4096)
            self.assertEqual(raised.exception.errno, errno.EAGAIN)
            with self.assertRaises(OSError) as raised:  # min > max
                ior.wait(min=2, max=1)
            self.assertEqual(raised.exception.errno, errno.EINVAL)
            ior.submit()
            self.assertEqual(ior.wait()[0].check(), 4096)

    def _register_tmp(self):
        with open("/proc/self/exe", "rb") as outside:
            self.session.register_fd(outside.fileno())

    def test_not_an_fgds_mount(self):
        with self.assertRaises(OSError) as raised:
            fgds.Session("/proc")
        self.assertEqual(raised.exception.errno, errno.ENOTSUP)

    def test_eventfd_signals_completions(self):
        with self.session.create_iov(4096) as iov, \
                self.session.create_ior() as ior, \
                self.session.open(self.path) as f:
            efd = ior.eventfd()
            ior.prep_read(iov, 0, f, 0, 4096)
            ior.submit()
            readable, _, _ = select.select([efd], [], [], 10)
            self.assertEqual(readable, [efd])
            os.read(efd, 8)
            completions = ior.peek()
            while not completions:
                completions = ior.peek()
            self.assertEqual(completions[0].check(), 4096)

    def test_closed_objects_refuse_calls(self):
        iov = self.session.create_iov(4096)
        ior = self.session.create_ior()
        f = self.session.open(self.path)
        f.close()
        f.close()  # idempotent
        iov.close()
        ior.close()
        with self.assertRaises(ValueError):
            iov.buffer
        with self.assertRaises(ValueError):
            ior.submit()
        # Closing the session closes what is still open on it.
        still_open_iov = self.session.create_iov(4096)
        still_open_ior = self.session.create_ior()
        self.session.close()
        with self.assertRaises(ValueError):
            still_open_iov.buffer
        with self.assertRaises(ValueError):
            still_open_ior.submit()
        with self.assertRaises(ValueError):
            self.session.create_iov(4096)

    def test_host_memory_cannot_be_a_gpu_iov(self):
        with self.assertRaises(ValueError):
            self.session.wrap_gpu(bytearray(4096))
        with self.session.create_iov(4096) as iov:
            with self.assertRaises(OSError) as raised:
                iov.gpu_path()
            self.assertEqual(raised.exception.errno, errno.EINVAL)


@unittest.skipUnless(HAVE_GPU, "needs a CUDA GPU and torch")
class GpuIovTest(unittest.TestCase):
    def setUp(self):
        self.data = os.urandom(SIZE)
        self.path = mount.path("gpu-" + self.id().rsplit(".", 1)[1])
        with open(self.path, "wb") as f:
            f.write(self.data)
        self.session = fgds.Session(mount.mountpoint)
        self.addCleanup(self.session.close)

    def test_read_into_and_write_from_a_tensor(self):
        tensor = torch.zeros(SIZE, dtype=torch.uint8, device="cuda")
        with self.session.wrap_gpu(tensor) as iov, \
                self.session.create_ior() as ior, \
                self.session.open(self.path, os.O_RDWR) as f:
            self.assertTrue(iov.is_gpu)
            path, reason = iov.gpu_path()
            self.assertIn(path, (fgds.PATH_DIRECT, fgds.PATH_BOUNCE))
            ior.prep_read(iov, 0, f, 0, SIZE, userdata=1)
            ior.submit()
            (c,) = ior.wait()
            self.assertEqual(c.check(), SIZE)
            self.assertEqual(bytes(tensor.cpu().numpy()), self.data)
            tensor[:4096] = 7
            torch.cuda.synchronize()
            ior.prep_write(iov, 0, f, 0, 4096)
            ior.submit()
            self.assertEqual(ior.wait()[0].check(), 4096)
            with self.assertRaises(ValueError):  # no host view of GPU memory
                iov.buffer
        with open(self.path, "rb") as back:
            self.assertEqual(back.read(4096), b"\x07" * 4096)


if __name__ == "__main__":
    unittest.main()


class LimitsTest(unittest.TestCase):
    """A request over a daemon limit raises OSError whose message names the
    limit (docs/limits.md), not only the errno."""

    def test_a_refused_ring_names_the_limit(self):
        reason = skip_reason()
        if reason:
            self.skipTest(reason)
        limited = MountedFgds(extra_args=("--user-rings", "1"))
        try:
            session = fgds.Session(limited.mountpoint)
            try:
                first = session.create_ior()  # kept: a dropped ior is freed
                with self.assertRaises(OSError) as raised:
                    session.create_ior()
                self.assertEqual(raised.exception.errno, errno.EDQUOT)
                self.assertIn("--user-rings", str(raised.exception))
                first.close()
            finally:
                session.close()
        finally:
            limited.close()
