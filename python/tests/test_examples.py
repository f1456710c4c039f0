"""examples/python runs as its docstrings say (on CPU here; the device
script runs them on a GPU): save a checkpoint, load it, and the usrbio
training loop over a dataset on a real mount."""

import os
import subprocess
import sys
import tempfile
import unittest

from mounted_fgds import MountedFgds, skip_reason

try:
    import torch
except ImportError:
    torch = None

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                        "..", "examples", "python")


def run(script, *args):
    result = subprocess.run([sys.executable, os.path.join(EXAMPLES, script),
                             *args], capture_output=True, text=True,
                            timeout=240)
    if result.returncode != 0:
        raise AssertionError(f"{script} failed:\n{result.stdout}"
                             f"{result.stderr}")
    return result.stdout


@unittest.skipIf(torch is None, "needs torch (python3-torch)")
class ExamplesTest(unittest.TestCase):
    def test_save_then_load_checkpoint(self):
        with tempfile.TemporaryDirectory() as directory:
            path = os.path.join(directory, "model.safetensors")
            self.assertIn("saved and checked 4 tensors",
                          run("save_checkpoint.py", path))
            self.assertIn("4 tensors", run("load_checkpoint.py", path, "cpu"))

    def test_usrbio_training_loop(self):
        reason = skip_reason()
        if reason:
            self.skipTest(reason)
        with MountedFgds() as mount:
            path = mount.path("train.bin")
            run("usrbio_training_loop.py", path, "--make")
            self.assertIn("12 steps", run("usrbio_training_loop.py", path,
                                          "12"))


if __name__ == "__main__":
    unittest.main()
