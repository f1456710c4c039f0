"""One fgds.Driver per CUDA device for the whole process, made on first
use: a driver holds worker threads and pinned staging memory, which every
load_file, save_file and GdsFile on that device shares. They close at
interpreter exit, before CUDA and the C++ runtime tear down under their
worker threads."""

import atexit
import threading

import torch

from ..direct import Driver

_lock = threading.Lock()
_drivers = {}


def device_index(device):
    """The CUDA ordinal of a torch device (None: the current device)."""
    if device.index is not None:
        return device.index
    return torch.cuda.current_device()


def driver_for(index):
    """The process's Driver on CUDA device `index` (its primary context,
    the one torch uses)."""
    with _lock:
        driver = _drivers.get(index)
        if driver is None:
            torch.cuda.init()
            driver = Driver(device=index)
            _drivers[index] = driver
        return driver


@atexit.register
def _close_all():
    with _lock:
        for driver in _drivers.values():
            driver.close()
        _drivers.clear()
