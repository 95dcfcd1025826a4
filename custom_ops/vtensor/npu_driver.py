"""Ascend NPU virtual-memory driver over the ACL runtime (libascendcl.so), through ctypes.

Imported only by ``driver_for`` for an NPU device, i.e. only where torch_npu imports. One
physical handle per mapping (aclrtMapMem maps a whole handle at offset 0), and no access step:
a mapping is usable by its device as soon as aclrtMapMem returns.

NOT RUN: no machine of this project has an NPU or CANN. This file follows the ACL runtime API
reference (function prototypes, struct layouts, enum values) and has been reviewed by reading only.
"""
import ctypes

import torch

from .driver import VmmDriver
from .errors import DriverError, VTensorOutOfMemoryError

_ACL_SUCCESS = 0
_ACL_ERROR_RT_MEMORY_ALLOCATION = 207001
_ACL_MEM_HANDLE_TYPE_NONE = 0
_ACL_MEM_ALLOCATION_TYPE_PINNED = 0
_ACL_HBM_MEM_HUGE = 4  # aclrtMemAttr: HBM, 2 MiB pages
_ACL_MEM_LOCATION_TYPE_DEVICE = 1
_ACL_RT_MEM_ALLOC_GRANULARITY_MINIMUM = 0


class _MemLocation(ctypes.Structure):
    _fields_ = [("id", ctypes.c_uint32), ("type", ctypes.c_int)]


class _PhysicalMemProp(ctypes.Structure):
    _fields_ = [("handleType", ctypes.c_int), ("allocationType", ctypes.c_int),
                ("memAttr", ctypes.c_int), ("location", _MemLocation),
                ("reserve", ctypes.c_uint64)]


def _load_acl() -> ctypes.CDLL:
    acl = ctypes.CDLL("libascendcl.so")
    acl.aclrtReserveMemAddress.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t,
                                           ctypes.c_size_t, ctypes.c_void_p, ctypes.c_uint64]
    acl.aclrtReleaseMemAddress.argtypes = [ctypes.c_void_p]
    acl.aclrtMallocPhysical.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t,
                                        ctypes.POINTER(_PhysicalMemProp), ctypes.c_uint64]
    acl.aclrtFreePhysical.argtypes = [ctypes.c_void_p]
    acl.aclrtMapMem.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t,
                                ctypes.c_void_p, ctypes.c_uint64]
    acl.aclrtUnmapMem.argtypes = [ctypes.c_void_p]
    acl.aclrtMemGetAllocationGranularity.argtypes = [
        ctypes.POINTER(_PhysicalMemProp), ctypes.c_int, ctypes.POINTER(ctypes.c_size_t)]
    acl.aclGetRecentErrMsg.restype = ctypes.c_char_p
    for name in ("aclrtReserveMemAddress", "aclrtReleaseMemAddress", "aclrtMallocPhysical",
                 "aclrtFreePhysical", "aclrtMapMem", "aclrtUnmapMem",
                 "aclrtMemGetAllocationGranularity"):
        getattr(acl, name).restype = ctypes.c_int
    return acl


class NpuDriver(VmmDriver):
    def __init__(self, device: torch.device):
        import torch_npu  # noqa: F401  (the NPU device type and events exist only with it)
        self.acl = _load_acl()
        self.device = device
        self.ordinal = device.index
        self.prop = _PhysicalMemProp(
            _ACL_MEM_HANDLE_TYPE_NONE, _ACL_MEM_ALLOCATION_TYPE_PINNED, _ACL_HBM_MEM_HUGE,
            _MemLocation(self.ordinal, _ACL_MEM_LOCATION_TYPE_DEVICE), 0)
        granularity = ctypes.c_size_t()
        with self._on_device():
            self._call(f"aclrtMemGetAllocationGranularity(device={self.ordinal}, MINIMUM)",
                       self.acl.aclrtMemGetAllocationGranularity(
                           ctypes.byref(self.prop), _ACL_RT_MEM_ALLOC_GRANULARITY_MINIMUM,
                           ctypes.byref(granularity)))
        self.granularity = granularity.value
        self._owners: dict = {}  # reservation address -> owner: see wrap

    def _call(self, call: str, code: int) -> None:
        if code != _ACL_SUCCESS:
            detail = self.acl.aclGetRecentErrMsg()
            message = (f"{call} failed on {self.device}: aclError {code}"
                       f"{': ' + detail.decode(errors='replace') if detail else ''}")
            if code == _ACL_ERROR_RT_MEMORY_ALLOCATION:
                raise VTensorOutOfMemoryError(message)
            raise DriverError(message)

    def _on_device(self):
        """The cache's device made current for one driver call and restored after it (torch_npu
        sets and restores the thread's ACL device, as torch.cuda.device does for CUDA)."""
        return torch.npu.device(self.device)

    def reserve(self, nbytes: int) -> int:
        address = ctypes.c_void_p()
        with self._on_device():
            self._call(f"aclrtReserveMemAddress(size={nbytes})",
                       self.acl.aclrtReserveMemAddress(ctypes.byref(address), nbytes, 0, None, 0))
        return address.value

    def release(self, address: int, nbytes: int) -> None:
        with self._on_device():
            self._call(f"aclrtReleaseMemAddress(0x{address:x})",
                       self.acl.aclrtReleaseMemAddress(address))

    def create(self, nbytes: int) -> object:
        handle = ctypes.c_void_p()
        with self._on_device():
            self._call(f"aclrtMallocPhysical(size={nbytes}, device={self.ordinal})",
                       self.acl.aclrtMallocPhysical(ctypes.byref(handle), nbytes,
                                                    ctypes.byref(self.prop), 0))
        return handle.value

    def destroy(self, handle: object) -> None:
        with self._on_device():
            self._call("aclrtFreePhysical", self.acl.aclrtFreePhysical(handle))

    def map(self, address: int, nbytes: int, handle: object) -> None:
        with self._on_device():
            self._call(f"aclrtMapMem(0x{address:x}, size={nbytes})",
                       self.acl.aclrtMapMem(address, nbytes, 0, handle, 0))

    def unmap(self, address: int, nbytes: int) -> None:
        with self._on_device():
            self._call(f"aclrtUnmapMem(0x{address:x})", self.acl.aclrtUnmapMem(address))

    def wrap(self, address: int, nbytes: int, owner: object) -> torch.Tensor:
        # An NPU storage cannot hold a Python owner: the extension's storage records its address
        # when its last view dies (custom_ops/csrc/npu/vtensor_storage.cpp), and collect drops
        # the owner then, which frees the reservation as on the other devices.
        tensor = torch.ops.custom._vtensor_npu_storage(address, nbytes, self.device)
        self._owners[address] = owner
        return tensor

    def collect(self) -> None:
        for address in torch.ops.custom._vtensor_npu_freed():
            self._owners.pop(address, None)  # (its __del__ closes the reservation)

    def record_fence(self) -> object:
        event = torch.npu.Event()
        event.record(torch.npu.current_stream(self.device))
        return event

    def fence_done(self, fence: object) -> bool:
        return fence.query()

    def wait_fence(self, fence: object) -> None:
        fence.synchronize()
