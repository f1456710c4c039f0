"""File bytes to and from host memory, many pieces in flight on a thread
pool (os.preadv/os.pwritev release the GIL), for the CPU side of
load_file, save_file and GdsFile."""

import concurrent.futures
import ctypes
import os

# Pieces of at most this size, so one large tensor spreads over threads.
PIECE_BYTES = 16 << 20
THREADS = min(8, os.cpu_count() or 1)


def host_view(address, nbytes):
    """A writable memoryview of `nbytes` bytes of host memory at `address`."""
    return memoryview((ctypes.c_char * nbytes).from_address(address)).cast("B")


def read_into(fd, transfers):
    """Reads each (address, nbytes, file_offset) of `transfers`; raises
    OSError, or EOFError when the file ends first."""
    _run(fd, transfers, _read_piece)


def write_from(fd, transfers):
    """Writes each (address, nbytes, file_offset) of `transfers`."""
    _run(fd, transfers, _write_piece)


def _run(fd, transfers, move):
    pieces = [(address + done, min(PIECE_BYTES, nbytes - done), offset + done)
              for address, nbytes, offset in transfers
              for done in range(0, nbytes, PIECE_BYTES)]
    if len(pieces) <= 1:
        for piece in pieces:
            move(fd, *piece)
        return
    with concurrent.futures.ThreadPoolExecutor(THREADS) as pool:
        for future in [pool.submit(move, fd, *p) for p in pieces]:
            future.result()


def _read_piece(fd, address, nbytes, offset):
    view = host_view(address, nbytes)
    while view:
        n = os.preadv(fd, [view], offset)
        if n == 0:
            raise EOFError(f"file ends at byte {offset}, before the data")
        view, offset = view[n:], offset + n


def _write_piece(fd, address, nbytes, offset):
    view = host_view(address, nbytes)
    while view:
        n = os.pwritev(fd, [view], offset)
        view, offset = view[n:], offset + n
