"""CUDA virtual-memory driver over cuda-python's ``cuda.bindings.driver`` (the [cuda] extra).

Imported only by ``driver_for`` for a CUDA device, so CPU-only machines never load it. Chunks are
pinned device memory created with cuMemCreate on the cache's device, mapped with cuMemMap and made
accessible with cuMemSetAccess per mapping; fences are torch CUDA events on the current stream.
The range is handed to torch through ``__cuda_array_interface__`` (torch.as_tensor), which keeps
the owner object alive for as long as any view of the storage lives, on torch 2.11 and 2.13 alike.
"""
import torch

from .driver import VmmDriver
from .errors import DriverError, VTensorOutOfMemoryError


def _bindings():
    try:
        from cuda.bindings import driver
    except ImportError:
        try:
            from cuda import cuda as driver  # cuda-python < 12.6 layout
        except ImportError as error:
            raise ImportError("virtual tensors on CUDA need cuda-python: "
                              "pip install 'custom_ops[cuda]'") from error
    return driver


class _DeviceBuffer:
    """A device range exposed through the CUDA array interface (v2: no stream, no implicit sync)."""

    def __init__(self, address: int, nbytes: int, owner: object):
        self.__cuda_array_interface__ = {
            "shape": (nbytes,), "typestr": "|u1", "data": (address, False), "version": 2}
        self.owner = owner


class _CaptureFence:
    """A fence asked for while the stream was being captured: recorded once capture has ended."""

    def __init__(self):
        self.event = None


class CudaDriver(VmmDriver):
    def __init__(self, device: torch.device):
        cu = self.cu = _bindings()
        self.device = device
        self.ordinal = device.index
        torch.zeros(1, device=device)  # the primary context torch uses, made current
        self._call("cuInit", cu.cuInit(0))
        prop = cu.CUmemAllocationProp()
        prop.type = cu.CUmemAllocationType.CU_MEM_ALLOCATION_TYPE_PINNED
        prop.location.type = cu.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
        prop.location.id = self.ordinal
        self.prop = prop
        access = cu.CUmemAccessDesc()
        access.location.type = cu.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
        access.location.id = self.ordinal
        access.flags = cu.CUmemAccess_flags.CU_MEM_ACCESS_FLAGS_PROT_READWRITE
        self.access = access
        self.granularity = int(self._call(
            f"cuMemGetAllocationGranularity(device={self.ordinal}, MINIMUM)",
            cu.cuMemGetAllocationGranularity(
                prop, cu.CUmemAllocationGranularity_flags.CU_MEM_ALLOC_GRANULARITY_MINIMUM)))

    def _call(self, call: str, result):
        """Unpack a cuda-python result tuple, turning an error code into an exception naming it."""
        error, *values = result if isinstance(result, tuple) else (result,)
        if error != self.cu.CUresult.CUDA_SUCCESS:
            name = self.cu.cuGetErrorName(error)[1]
            text = self.cu.cuGetErrorString(error)[1]
            message = (f"{call} failed on {self.device}: "
                       f"{name.decode() if name else error} ({text.decode() if text else ''})")
            if error == self.cu.CUresult.CUDA_ERROR_OUT_OF_MEMORY:
                raise VTensorOutOfMemoryError(message)
            raise DriverError(message)
        return values[0] if len(values) == 1 else values

    def reserve(self, nbytes: int) -> int:
        with torch.cuda.device(self.device):
            return int(self._call(f"cuMemAddressReserve(size={nbytes})",
                                  self.cu.cuMemAddressReserve(nbytes, self.granularity, 0, 0)))

    def release(self, address: int, nbytes: int) -> None:
        with torch.cuda.device(self.device):
            self._call(f"cuMemAddressFree(0x{address:x}, size={nbytes})",
                       self.cu.cuMemAddressFree(address, nbytes))

    def create(self, nbytes: int) -> object:
        with torch.cuda.device(self.device):
            return self._call(f"cuMemCreate(size={nbytes}, device={self.ordinal})",
                              self.cu.cuMemCreate(nbytes, self.prop, 0))

    def destroy(self, handle: object) -> None:
        with torch.cuda.device(self.device):
            self._call("cuMemRelease", self.cu.cuMemRelease(handle))

    def map(self, address: int, nbytes: int, handle: object) -> None:
        with torch.cuda.device(self.device):
            self._call(f"cuMemMap(0x{address:x}, size={nbytes})",
                       self.cu.cuMemMap(address, nbytes, 0, handle, 0))
            try:
                self._call(f"cuMemSetAccess(0x{address:x}, size={nbytes}, device={self.ordinal})",
                           self.cu.cuMemSetAccess(address, nbytes, [self.access], 1))
            except BaseException:  # any failure (out of memory included) leaves nothing mapped
                self.cu.cuMemUnmap(address, nbytes)
                raise

    def unmap(self, address: int, nbytes: int) -> None:
        with torch.cuda.device(self.device):
            self._call(f"cuMemUnmap(0x{address:x}, size={nbytes})",
                       self.cu.cuMemUnmap(address, nbytes))

    def wrap(self, address: int, nbytes: int, owner: object) -> torch.Tensor:
        tensor = torch.as_tensor(_DeviceBuffer(address, nbytes, owner), device=self.device)
        if tensor.data_ptr() != address or tensor.device != self.device:
            raise DriverError(f"wrapping 0x{address:x} as a tensor on {self.device} gave "
                              f"0x{tensor.data_ptr():x} on {tensor.device}")
        return tensor

    def record_fence(self) -> object:
        if torch.cuda.is_current_stream_capturing():
            return _CaptureFence()
        event = torch.cuda.Event()
        event.record(torch.cuda.current_stream(self.device))
        return event

    def _event(self, fence: object) -> torch.cuda.Event | None:
        if isinstance(fence, _CaptureFence):
            if fence.event is None and not torch.cuda.is_current_stream_capturing():
                fence.event = self.record_fence()
            return fence.event
        return fence

    def fence_done(self, fence: object) -> bool:
        event = self._event(fence)
        return event is not None and event.query()

    def wait_fence(self, fence: object) -> None:
        event = self._event(fence)
        if event is None:
            raise DriverError("cannot wait for a free requested during CUDA graph capture "
                              "until the capture has ended")
        event.synchronize()

    def memory_info(self) -> tuple[int, int]:
        """(free, total) bytes of the device, from cuMemGetInfo."""
        with torch.cuda.device(self.device):
            free, total = self._call("cuMemGetInfo", self.cu.cuMemGetInfo())
        return int(free), int(total)
