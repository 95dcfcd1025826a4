"""The small interface every virtual-memory driver implements, and the lookup of a device's driver.

A driver knows one device and speaks its runtime: reserve a virtual range, create physical chunks,
map/unmap them at offsets of the range, wrap the range as a torch tensor, and order frees after
the work queued on the device (fences). Everything else (chunking, layout, pools, budget, stats)
lives once, above it, in ``memory.py`` and ``cache.py``.
"""
import abc

import torch


class VmmDriver(abc.ABC):
    """Virtual-memory operations of one device; sizes and offsets are multiples of granularity."""

    device: torch.device
    granularity: int  # bytes; the driver's minimum mapping unit

    @abc.abstractmethod
    def reserve(self, nbytes: int) -> int:
        """Reserve ``nbytes`` of address space with nothing behind it; return its address."""

    @abc.abstractmethod
    def release(self, address: int, nbytes: int) -> None:
        """Give back a reservation whose mappings are all gone."""

    @abc.abstractmethod
    def create(self, nbytes: int) -> object:
        """Create a physical chunk; raise ``VTensorOutOfMemoryError`` when the device is full."""

    @abc.abstractmethod
    def destroy(self, handle: object) -> None:
        """Free a physical chunk that is mapped nowhere."""

    @abc.abstractmethod
    def map(self, address: int, nbytes: int, handle: object) -> None:
        """Back ``[address, address + nbytes)`` with ``handle``, readable and writable."""

    @abc.abstractmethod
    def unmap(self, address: int, nbytes: int) -> None:
        """Remove the backing of ``[address, address + nbytes)``; the handle stays valid."""

    @abc.abstractmethod
    def wrap(self, address: int, nbytes: int, owner: object) -> torch.Tensor:
        """A uint8 tensor [nbytes] over the range; its storage keeps ``owner`` alive."""

    def collect(self) -> None:
        """Drop the owners of wrapped ranges whose storage has died, where the storage cannot hold
        its owner itself (NPU); nothing elsewhere."""

    def record_fence(self) -> object:
        """Mark the work queued so far on the current stream; ``None`` where work is synchronous."""
        return None

    def fence_done(self, fence: object) -> bool:
        return True

    def wait_fence(self, fence: object) -> None:
        """Block until the fenced work is done (a wait on that work only, never on the device)."""


_DRIVERS: dict[torch.device, VmmDriver] = {}


def driver_for(device: torch.device) -> VmmDriver:
    """The driver of ``device`` (an index is required except for CPU), created on first use.

    The CUDA and NPU drivers are imported here, lazily, so a CPU-only machine never loads them.
    """
    driver = _DRIVERS.get(device)
    if driver is None:
        if device.type == "cpu":
            from .cpu_driver import CpuDriver
            driver = CpuDriver()
        elif device.type == "cuda":
            from .cuda_driver import CudaDriver
            driver = CudaDriver(device)
        elif device.type == "npu":
            from .npu_driver import NpuDriver
            driver = NpuDriver(device)
        else:
            raise ValueError(
                f"device must be cpu, cuda or npu for a virtual tensor, got {device}")
        _DRIVERS[device] = driver
    return driver
