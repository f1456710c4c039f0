"""fgds._library: where the shared libraries come from, and the error
that says how to fix a missing one."""

import os
import unittest
from unittest import mock

from fgds import _library


class LibraryTest(unittest.TestCase):
    def test_library_dir_from_the_environment_wins(self):
        directory = os.environ.get("FGDS_LIBRARY_DIR")
        if not directory:
            self.skipTest("FGDS_LIBRARY_DIR is not set (run through ctest)")
        library = _library.load("fgds_usrbio")
        self.assertEqual(os.path.dirname(library._name),
                         directory.rstrip("/"))

    def test_missing_library_names_the_fix(self):
        with mock.patch.dict(_library._SONAMES,
                             {"absent": "libfgds_absent.so.0"}):
            with self.assertRaises(OSError) as raised:
                _library.load("absent")
        self.assertIn("libfgds_absent.so.0", str(raised.exception))
        self.assertIn("FGDS_LIBRARY_DIR", str(raised.exception))

    def test_loaded_once(self):
        self.assertIs(_library.load("fgds"), _library.load("fgds"))


if __name__ == "__main__":
    unittest.main()
