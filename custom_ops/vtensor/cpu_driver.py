"""CPU virtual-memory driver: an mmap PROT_NONE reservation whose pages are committed on demand.

It exists so that all the logic above the driver (chunking, layout, stale views, rollback, budget,
statistics) runs in CI. A "physical chunk" is a budget token: on Linux the pages behind a private
anonymous mapping are committed by mprotect(READ|WRITE) and handed back by madvise(DONTNEED).
"""
import ctypes
import mmap
import os

import numpy as np
import torch

from .driver import VmmDriver
from .errors import DriverError, VTensorOutOfMemoryError

_MAP_NORESERVE = 0x4000  # Linux; Python's mmap module does not export it
_PROT_NONE = 0

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                       ctypes.c_long]
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
_libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
_MAP_FAILED = ctypes.c_void_p(-1).value


def _check(rc: int, call: str) -> None:
    if rc != 0:
        err = ctypes.get_errno()
        message = f"{call} failed: {os.strerror(err)} (errno {err})"
        if err == 12:  # ENOMEM
            raise VTensorOutOfMemoryError(message)
        raise DriverError(message)


class _HostBuffer:
    """Exposes a range through ``__array_interface__`` so numpy/torch wrap it without copying."""

    def __init__(self, address: int, nbytes: int, owner: object):
        self.__array_interface__ = {
            "shape": (nbytes,), "typestr": "|u1", "data": (address, False), "version": 3}
        self.owner = owner


class CpuDriver(VmmDriver):
    def __init__(self):
        self.device = torch.device("cpu")
        self.granularity = mmap.PAGESIZE

    def reserve(self, nbytes: int) -> int:
        address = _libc.mmap(None, nbytes, _PROT_NONE,
                             mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | _MAP_NORESERVE, -1, 0)
        if address in (None, _MAP_FAILED):
            err = ctypes.get_errno()
            raise VTensorOutOfMemoryError(
                f"mmap(size={nbytes}, PROT_NONE) failed: {os.strerror(err)} (errno {err})")
        return address

    def release(self, address: int, nbytes: int) -> None:
        _check(_libc.munmap(address, nbytes), f"munmap(0x{address:x}, size={nbytes})")

    def create(self, nbytes: int) -> object:
        return nbytes

    def destroy(self, handle: object) -> None:
        pass

    def map(self, address: int, nbytes: int, handle: object) -> None:
        _check(_libc.mprotect(address, nbytes, mmap.PROT_READ | mmap.PROT_WRITE),
               f"mprotect(0x{address:x}, size={nbytes}, READ|WRITE)")

    def unmap(self, address: int, nbytes: int) -> None:
        _check(_libc.madvise(address, nbytes, mmap.MADV_DONTNEED),
               f"madvise(0x{address:x}, size={nbytes}, DONTNEED)")
        _check(_libc.mprotect(address, nbytes, _PROT_NONE),
               f"mprotect(0x{address:x}, size={nbytes}, NONE)")

    def wrap(self, address: int, nbytes: int, owner: object) -> torch.Tensor:
        return torch.from_numpy(np.asarray(_HostBuffer(address, nbytes, owner)))
