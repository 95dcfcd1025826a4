"""Per-device physical memory above the driver: reservations, chunk pool, budget, deferred frees.

Physical chunks come from a small per-device pool (pre-created, and refilled with chunks that
were unmapped), so a growing cache rarely waits on the driver's create call. Unmapping is
stream-ordered: a chunk that kernels may still read is first parked behind a fence (an event on
the current stream) and unmapped only once the fence has passed, never with a device-wide sync.
"""
import torch

from .driver import driver_for
from .errors import DriverError, VTensorOutOfMemoryError

POOL_TARGET = 2  # chunks kept pre-created per chunk size while a device has live reservations
POOL_LIMIT = 8  # unmapped chunks kept for reuse instead of being destroyed


class DeviceMemory:
    """Bookkeeping of one device: everything the statistics report and the budget limits."""

    def __init__(self, device: torch.device):
        self.device = device
        self.driver = driver_for(device)
        self.granularity = self.driver.granularity
        self.budget: int | None = None
        self.pool: dict[int, list] = {}
        self.reserved = 0
        self.mapped = 0
        self.pooled = 0
        self.parked = 0  # mapped but waiting for a fence before the unmap
        self.live: set = set()
        self.closing: list = []  # (fence, reservation) released by their owner

    @property
    def physical(self) -> int:
        return self.mapped + self.pooled

    def take(self, nbytes: int) -> object:
        """A physical chunk of ``nbytes``: from the pool, else a new one within the budget."""
        pooled = self.pool.get(nbytes)
        if pooled:
            self.pooled -= nbytes
            return pooled.pop()
        if self.budget is not None and self.physical + nbytes > self.budget:
            raise VTensorOutOfMemoryError(
                f"virtual-tensor memory budget of {self.budget} bytes on {self.device} exhausted: "
                f"{self.physical} bytes in use, a {nbytes}-byte chunk needed "
                "(raise it with custom_ops.vtensor.set_memory_budget)")
        return self.driver.create(nbytes)

    def give(self, nbytes: int, handle: object) -> None:
        """Take back an unmapped chunk: into the pool while there is room, else destroy it."""
        pooled = self.pool.setdefault(nbytes, [])
        if len(pooled) < POOL_LIMIT and self.live:
            pooled.append(handle)
            self.pooled += nbytes
        else:
            self.driver.destroy(handle)

    def prefill(self, nbytes: int) -> None:
        """Pre-create chunks up to ``POOL_TARGET`` where the budget and the device allow."""
        pooled = self.pool.setdefault(nbytes, [])
        while len(pooled) < POOL_TARGET:
            if self.budget is not None and self.physical + nbytes > self.budget:
                return
            try:
                pooled.append(self.driver.create(nbytes))
            except (VTensorOutOfMemoryError, DriverError):  # best effort: the mapping is done
                return
            self.pooled += nbytes

    def close(self, reservation: "Reservation") -> None:
        """Free a reservation once the work queued so far on the device is done."""
        self.closing.append((self.driver.record_fence(), reservation))
        self.reap()

    def reap(self, wait: bool = False) -> None:
        """Unmap whatever waited for a fence that has passed (all of it if ``wait``)."""
        self.driver.collect()  # (NPU: caches whose last view died since the last call close now)
        if self.parked:
            for reservation in list(self.live):
                reservation.reap_parked(wait)
        if not self.closing:
            return
        still = []
        for fence, reservation in self.closing:
            if wait:
                self.driver.wait_fence(fence)
            if wait or self.driver.fence_done(fence):
                reservation.destroy()
            else:
                still.append((fence, reservation))
        self.closing = still
        if not self.live and not self.closing:
            self._drain_pool()

    def _drain_pool(self) -> None:
        for nbytes, handles in self.pool.items():
            for handle in handles:
                self.driver.destroy(handle)
            self.pooled -= nbytes * len(handles)
        self.pool.clear()

    def stats(self) -> dict:
        self.reap()
        return {
            "reserved_bytes": self.reserved,
            "mapped_bytes": self.mapped,
            "pooled_bytes": self.pooled,
            "pending_free_bytes": self.parked,
            "physical_bytes": self.physical,
            "budget_bytes": self.budget,
            "reservations": len(self.live),
        }


_MEMORY: dict[torch.device, DeviceMemory] = {}


def _available(kind: str) -> bool:
    module = getattr(torch, kind, None)  # (torch.npu exists once torch_npu is imported)
    return module is not None and module.is_available()


def device_memory(device: torch.device) -> DeviceMemory:
    """The bookkeeping of ``device``; CUDA/NPU devices without an index mean the current one."""
    device = torch.device(device)
    if device.type not in ("cpu", "cuda", "npu"):
        raise ValueError(f"device must be cpu, cuda or npu for a virtual tensor, got {device}")
    if device.type != "cpu" and not _available(device.type):
        raise ValueError(f"device {device}: no {device.type} device is available here")
    if device.type != "cpu" and device.index is None:
        device = torch.device(device.type, getattr(torch, device.type).current_device())
    if device.type == "cpu":
        device = torch.device("cpu")
    memory = _MEMORY.get(device)
    if memory is None:
        memory = _MEMORY[device] = DeviceMemory(device)
    return memory


def all_device_memory() -> dict:
    return dict(_MEMORY)


class Reservation:
    """A virtual range of ``regions`` equal regions; each region is backed by a prefix of chunks.

    Region r spans ``[r * region_bytes, (r + 1) * region_bytes)``. Chunks are mapped in order from
    the start of a region, so a region's backing is described by how many chunks it holds.
    """

    def __init__(self, memory: DeviceMemory, regions: int, region_bytes: int, chunk_bytes: int):
        self.memory = memory
        self.regions = regions
        self.region_bytes = region_bytes
        self.chunk = chunk_bytes
        self.nbytes = regions * region_bytes
        self.address = memory.driver.reserve(self.nbytes)
        self.chunks: list[list] = [[] for _ in range(regions)]
        # chunks past the backing, still mapped, unmapped once their fence passes: [(fence, handle)]
        self.parked: list[list] = [[] for _ in range(regions)]
        memory.reserved += self.nbytes
        memory.live.add(self)

    def mapped_bytes(self, region: int) -> int:
        return len(self.chunks[region]) * self.chunk

    def _chunk_address(self, region: int, index: int) -> int:
        return self.address + region * self.region_bytes + index * self.chunk

    def ensure(self, wants: dict[int, int]) -> None:
        """Back at least ``wants[r]`` bytes of each region r; on failure nothing has changed."""
        memory, driver = self.memory, self.memory.driver
        memory.reap()
        plan = []  # (region, chunk index) to map, in order
        for region, nbytes in wants.items():
            if nbytes > self.region_bytes:
                raise ValueError(f"{nbytes} bytes do not fit a {self.region_bytes}-byte region")
            have = len(self.chunks[region])
            plan += [(region, i) for i in range(have, -(-nbytes // self.chunk))]
        done = []  # (region, index, handle, parked entry or None)
        try:
            for region, index in plan:
                parked = self.parked[region]
                if parked:
                    entry = parked.pop(0)
                    done.append((region, index, entry[1], entry))
                    memory.parked -= self.chunk
                    continue
                handle = memory.take(self.chunk)
                try:
                    driver.map(self._chunk_address(region, index), self.chunk, handle)
                except BaseException:
                    memory.give(self.chunk, handle)
                    raise
                memory.mapped += self.chunk
                done.append((region, index, handle, None))
        except BaseException:
            for region, index, handle, entry in reversed(done):
                if entry is not None:
                    self.parked[region].insert(0, entry)
                    memory.parked += self.chunk
                else:
                    driver.unmap(self._chunk_address(region, index), self.chunk)
                    memory.mapped -= self.chunk
                    memory.give(self.chunk, handle)
            raise
        for region, _, handle, _ in done:
            self.chunks[region].append(handle)
        if plan:
            memory.prefill(self.chunk)

    def shrink(self, keeps: dict[int, int]) -> None:
        """Keep only enough chunks for ``keeps[r]`` bytes; the rest are unmapped after a fence."""
        fence = None
        for region, nbytes in keeps.items():
            keep = -(-nbytes // self.chunk)
            tail = self.chunks[region][keep:]
            if not tail:
                continue
            if fence is None:
                fence = self.memory.driver.record_fence()
            del self.chunks[region][keep:]
            self.parked[region][:0] = [(fence, handle) for handle in tail]
            self.memory.parked += self.chunk * len(tail)
        self.memory.reap()

    def reap_parked(self, wait: bool) -> None:
        driver = self.memory.driver
        for region in range(self.regions):
            parked = self.parked[region]
            if not parked:
                continue
            if wait:
                for fence, _ in parked:
                    driver.wait_fence(fence)
            elif not all(driver.fence_done(fence) for fence, _ in parked):
                continue
            base = len(self.chunks[region])
            for offset, (_, handle) in enumerate(parked):
                driver.unmap(self._chunk_address(region, base + offset), self.chunk)
                self.memory.mapped -= self.chunk
                self.memory.parked -= self.chunk
                self.memory.give(self.chunk, handle)
            parked.clear()

    def destroy(self) -> None:
        """Unmap and free everything (its owner is gone and its fence has passed)."""
        memory, driver = self.memory, self.memory.driver
        self.reap_parked(wait=True)
        for region in range(self.regions):
            for index, handle in enumerate(self.chunks[region]):
                driver.unmap(self._chunk_address(region, index), self.chunk)
                memory.mapped -= self.chunk
                memory.give(self.chunk, handle)
            self.chunks[region].clear()
        memory.live.discard(self)
        driver.release(self.address, self.nbytes)
        memory.reserved -= self.nbytes
