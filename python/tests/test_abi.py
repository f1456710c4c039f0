"""The ctypes mirrors (fgds/_abi.py) against the C compiler's layout of the
public headers (abi_layout.c, built by CMake; $FGDS_ABI_LAYOUT names it),
and the libraries' exports against the prototypes."""

import ctypes
import json
import os
import subprocess
import unittest

from fgds import _abi


class AbiLayoutTest(unittest.TestCase):
    def setUp(self):
        program = os.environ.get("FGDS_ABI_LAYOUT")
        if not program:
            self.skipTest("FGDS_ABI_LAYOUT is not set (run through ctest)")
        self.layout = json.loads(subprocess.check_output([program]))

    def test_every_struct_matches_c(self):
        self.assertEqual(set(self.layout), set(_abi.STRUCTS))
        for name, struct in _abi.STRUCTS.items():
            with self.subTest(struct=name):
                c = self.layout[name]
                self.assertEqual(ctypes.sizeof(struct), c["size"])
                python_fields = {f: getattr(struct, f).offset
                                 for f, _ in struct._fields_}
                self.assertEqual(python_fields, c["fields"])


class ExportsTest(unittest.TestCase):
    def test_every_prototype_resolves(self):
        # Binding looks every function up: a missing export raises here.
        self.assertTrue(_abi.usrbio().fgds_ior_submit)
        self.assertTrue(_abi.direct().fgds_io_submit)


if __name__ == "__main__":
    unittest.main()
