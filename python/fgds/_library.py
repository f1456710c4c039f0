"""Finds and loads the fgds shared libraries (libfgds, libfgds_usrbio).

Search order, first hit wins:
  1. $FGDS_LIBRARY_DIR (a build tree's install/ folder, or any folder
     holding the libraries): for tests and for trying a build in place;
  2. the installed tree: the package lives in <libdir>/fgds/python/fgds, so
     the libraries are three folders up, wherever the prefix was moved;
  3. the dynamic linker's own search (ld.so.conf, LD_LIBRARY_PATH).
Each library is loaded once, on first use, so a program that only uses
the rings never needs the direct API's library and the other way round.
"""

import ctypes
import functools
import os

_SONAMES = {"fgds": "libfgds.so.0", "fgds_usrbio": "libfgds_usrbio.so.0"}


def _candidates(soname):
    env_dir = os.environ.get("FGDS_LIBRARY_DIR")
    if env_dir:
        yield os.path.join(env_dir, soname)
    package_dir = os.path.dirname(os.path.abspath(__file__))
    libdir = os.path.normpath(os.path.join(package_dir, "..", "..", ".."))
    yield os.path.join(libdir, soname)
    yield soname


@functools.lru_cache(maxsize=None)
def load(name):
    """Returns the ctypes.CDLL of library `name` ("fgds" or "fgds_usrbio")."""
    soname = _SONAMES[name]
    errors = []
    for candidate in _candidates(soname):
        if os.path.sep in candidate and not os.path.exists(candidate):
            continue
        try:
            return ctypes.CDLL(candidate, use_errno=False)
        except OSError as error:
            errors.append(f"{candidate}: {error}")
    raise OSError(
        f"cannot load {soname} (set FGDS_LIBRARY_DIR to the folder holding it,"
        f" or install fgds): " + "; ".join(errors or ["not found"]))
