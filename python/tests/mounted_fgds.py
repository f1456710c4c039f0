"""MountedFgds: a real fgds daemon (`fgds mount -f`) on a private temporary
mountpoint over a private backing directory, for the usrbio tests; the
Python twin of tests/lib/mounted_fs.h. Leaving the `with` block unmounts,
stops the daemon and removes both directories, whatever the test did.

Needs root and /dev/fuse, and $FGDS_BINARY (the built `fgds`, set by
ctest); skip_reason() says why a test cannot mount."""

import os
import shutil
import subprocess
import tempfile
import time


def skip_reason():
    if not os.environ.get("FGDS_BINARY"):
        return "FGDS_BINARY is not set (run through ctest)"
    if os.geteuid() != 0:
        return "mounting needs root"
    if not os.path.exists("/dev/fuse"):
        return "no /dev/fuse"
    return None


def _mount_type(path):
    """The file system type mounted at exactly `path` (the topmost), from
    /proc/self/mountinfo, without touching the mount itself."""
    found = None
    with open("/proc/self/mountinfo") as mountinfo:
        for line in mountinfo:
            fields = line.split()
            point = fields[4].encode().decode("unicode_escape")
            if point == path:
                found = fields[fields.index("-") + 1]
    return found


class MountedFgds:
    def __init__(self, extra_args=(), timeout=10.0):
        self.root = tempfile.mkdtemp(prefix="fgds-py-")
        self.mountpoint = os.path.join(self.root, "mnt")
        self.backing = os.path.join(self.root, "data")
        os.mkdir(self.mountpoint)
        os.mkdir(self.backing)
        self.binary = os.environ["FGDS_BINARY"]
        self.process = subprocess.Popen(
            [self.binary, "mount", "-f", "--data", self.backing,
             *extra_args, self.mountpoint])
        deadline = time.monotonic() + timeout
        while _mount_type(self.mountpoint) != "fuse.fgds":
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.close()
                raise RuntimeError("fgds mount did not come up")
            time.sleep(0.02)

    def path(self, name):
        return os.path.join(self.mountpoint, name)

    def close(self):
        if _mount_type(self.mountpoint) is not None:
            if subprocess.run(["umount", self.mountpoint]).returncode != 0:
                subprocess.run(["umount", "-l", self.mountpoint])
        if self.process.poll() is None:
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
