"""C results to Python: every fgds_* call returns a count or -errno, and a
negative one becomes OSError with that errno (so callers can test
`error.errno == errno.ENOENT` as for any system call)."""

import os


def check(result, what, detail=None):
    """Returns `result` if it is >= 0, else raises OSError(-result).

    `detail` is a callable giving more words (libfgds's fgds_last_error);
    it runs only on failure, on the failing thread."""
    if result >= 0:
        return result
    err = -result
    message = f"{what}: {os.strerror(err)}"
    if detail is not None:
        extra = detail()
        if extra:
            message += f" ({extra})"
    raise OSError(err, message)
