"""A KV cache [B, S, H, D] over one virtual reservation: layout, views, growth, rollback, backing.

Layouts (SPEC §3), chosen per cache:
- "per_sequence" (vAttention): sequence b owns region b of the reservation, [S_cap, H, D] in
  memory; logical strides (region, H*D, D, 1). Each sequence is backed on its own, so ragged
  lengths cost only their own chunks, and attention kernels see an ordinary strided batch.
- "sequence_major" (the seed): one region [S_cap, B, H, D]; logical strides (H*D, B*H*D, D, 1);
  one growing tail shared by the batch.
``limits`` [B] on the device holds the tokens each sequence has backing for, kept in step with
every mapping change: ``vtensor_append_`` drops (and counts) the writes past it instead of
faulting, since a CUDA graph cannot check on the host.

The cache object never holds a tensor of its own storage: the storage keeps the cache alive
(through the wrapped buffer's owner), and when the last view dies the reservation is freed,
stream-ordered. Views are rebuilt with ``as_strided`` from whichever view the caller passes.
"""
import math
import sys
import weakref

import torch

from .errors import ReservationExhaustedError, VTensorOutOfMemoryError
from .memory import Reservation, device_memory

LAYOUTS = ("per_sequence", "sequence_major")
DEFAULTS = {
    "reserve_bytes": 4 << 30,  # per cache, when a plain tensor is turned into a virtual one
    "chunk_bytes": 2 << 20,  # a multiple of every granularity seen (CPU pages, CUDA 2 MiB)
    # Measured on an H200 (decode_demo, B=64, 8 layers): flash attention takes the same GPU time
    # on either layout; sequence-major shares each 2 MiB chunk across the batch, so it maps B
    # times fewer chunks and holds B times less slack. per_sequence is for ragged batches.
    "layout": "sequence_major",
    "map_ahead": True,  # map a sequence's next chunk once its last one is full
    # sequence_major's default chunk holds at least this many tokens of the whole batch (so
    # max(chunk_bytes, tokens * B * H * D * itemsize)): every driver call of a crossing is paid
    # by all B sequences at once, and at B=64 (4 KiB per token and sequence) a 2 MiB chunk is
    # only 8 steps; 64 tokens make it 16 MiB, 8x fewer crossings, at most one chunk past the
    # live tokens as before (still 8x less slack than per_sequence's 2 MiB per sequence).
    "sequence_major_chunk_tokens": 64,
}

_REGISTRY: dict[tuple, weakref.ref] = {}
# id(view) -> cache, for the last view vtensor_append returned of each cache: a decode loop
# passes the last result straight back, and recognising it replaces the storage lookup, the
# layout checks and the cache's own argument checks by a few comparisons. One entry per cache,
# replaced by its next result and dropped with the cache. It is only a hint: the cache's weak
# reference to the view tells its result from a new object that reuses a dead one's id.
RESULTS: dict[int, "VirtualCache"] = {}


class _Owner:
    """Kept alive by the storage of every view; frees the reservation when the last view dies."""

    def __init__(self, cache: "VirtualCache"):
        self.cache = cache

    def __del__(self):
        cache = self.cache
        if cache is None or sys.is_finalizing():  # disarmed, or the driver is going away
            return
        _REGISTRY.pop(cache.key, None)
        cache.forget_result()
        cache.reservation.memory.close(cache.reservation)


def _round_up(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple


class VirtualCache:
    """Bookkeeping of one virtual KV cache; ``create`` returns it with its base tensor."""

    def __init__(self, batch, heads, head_dim, dtype, device, capacity, chunk_bytes, layout,
                 region_bytes=None):
        memory = device_memory(device)
        if batch == 1:
            layout = "per_sequence"  # the two layouts are the same memory for one sequence
        self.batch, self.heads, self.head_dim = batch, heads, head_dim
        self.dtype, self.device, self.layout = dtype, memory.device, layout
        self.row_bytes = heads * head_dim * dtype.itemsize  # one token of one sequence
        # bytes one more token takes in one region
        self.token_bytes = self.row_bytes if layout == "per_sequence" else batch * self.row_bytes
        if chunk_bytes is None:
            chunk_bytes = DEFAULTS["chunk_bytes"]
            if layout == "sequence_major":
                chunk_bytes = max(chunk_bytes,
                                  DEFAULTS["sequence_major_chunk_tokens"] * self.token_bytes)
        chunk = _round_up(chunk_bytes, memory.granularity)
        if region_bytes is None:
            region_bytes = _round_up(capacity * self.token_bytes, chunk)
            self.capacity = capacity
        else:
            chunk = math.gcd(chunk, region_bytes)
            self.capacity = region_bytes // self.token_bytes
        self.chunk = chunk
        data_regions = batch if layout == "per_sequence" else 1
        self.reservation = Reservation(memory, data_regions, region_bytes, chunk)
        self.region_elems = region_bytes // dtype.itemsize
        hd = heads * head_dim
        # element strides of every view [B, S, H, D]; fixed for the cache's life, so the append
        # fast path reuses them instead of recomputing
        self.strides = ((self.region_elems, hd, head_dim, 1) if layout == "per_sequence"
                        else (hd, batch * hd, head_dim, 1))
        # ATen's CUDA copy_ splits an iteration whose byte offsets pass 2^31 - 1 into several
        # launches; a copy_ of new tokens into [B, T, H, D] spans B - 1 regions and T tokens,
        # under B regions. Caches whose B regions reach 2^31 bytes write them as rows of a
        # [B, T·H·D] view, index_copy_ along B (B's stride stays out of the iteration). Below
        # the bound copy_ is faster. (docs/probes/vt_span_probe.py on the H200: at 2.23 GB
        # copy_ 5.5 µs, index_copy_ 3.2; at 2.01 GB copy_ 2.8, index_copy_ 3.2.)
        self.batch_index = None
        if layout == "per_sequence" and batch > 1 and batch * region_bytes >= 2**31:
            self.batch_index = torch.arange(batch, device=self.device)
        self.length = 0  # tokens of the live view of the functional ops
        self.backed = 0  # tokens every sequence has backing for (the decode step's fast path)
        self.key = (self.device, self.reservation.address)
        # the last view vtensor_append returned (see RESULTS), held weakly: the cache object
        # must not keep a view of its own storage alive
        self.result, self.result_id, self.result_shape = None, None, None
        self.limits = torch.zeros(batch, dtype=torch.int64, device=self.device)
        self.limits_host = [0] * batch  # what ``limits`` holds, so unchanged limits are not copied
        self.dropped = torch.zeros((), dtype=torch.int64, device=self.device)

    @classmethod
    def create(cls, batch, heads, head_dim, dtype, device, capacity, chunk_bytes=None, layout=None,
               region_bytes=None) -> tuple["VirtualCache", torch.Tensor]:
        cache = cls(batch, heads, head_dim, dtype, device, capacity, chunk_bytes,
                    DEFAULTS["layout"] if layout is None else layout, region_bytes)
        reservation = cache.reservation
        owner = _Owner(cache)
        try:
            # CUDA infers a wrapped pointer's device from its attributes: the base must be mapped.
            reservation.ensure({0: min(cache.chunk, reservation.region_bytes)})
            base = reservation.memory.driver.wrap(reservation.address, reservation.nbytes, owner)
        except BaseException:
            owner.cache = None  # freed here, once: the owner may outlive this frame
            reservation.memory.close(reservation)
            raise
        _REGISTRY[cache.key] = weakref.ref(cache)
        return cache, base.view(dtype)

    # --- views -----------------------------------------------------------------------------
    def view(self, like: torch.Tensor, length: int) -> torch.Tensor:
        """[B, length, H, D] over this cache, built from any tensor sharing its storage."""
        return like.as_strided((self.batch, length, self.heads, self.head_dim), self.strides, 0)

    def is_view(self, tensor: torch.Tensor) -> bool:
        """Whether ``tensor`` is a prefix [B, S, H, D] of this cache in its own layout."""
        if (tensor.dim() != 4 or tensor.dtype != self.dtype or tensor.storage_offset() != 0
                or tuple(tensor.shape[::2]) != (self.batch, self.heads)
                or tensor.shape[3] != self.head_dim or tensor.shape[1] > self.capacity):
            return False
        return all(size == 1 or stride == want for size, stride, want
                   in zip(tensor.shape, tensor.stride(), self.strides))

    def remember(self, view: torch.Tensor, shape: tuple) -> None:
        """Make ``view`` (of ``shape``) the result that the next append recognises (RESULTS)."""
        RESULTS.pop(self.result_id, None)  # see forget_result
        self.result_id = key = id(view)
        self.result, self.result_shape = weakref.ref(view), shape
        RESULTS[key] = self

    def forget_result(self) -> None:
        # Unchecked: should the id since name another cache's result, that cache only loses
        # its shortcut for one call (RESULTS is a hint; the weak reference decides).
        RESULTS.pop(self.result_id, None)

    # --- backing ---------------------------------------------------------------------------
    def ensure_all(self, length: int) -> None:
        """Back at least ``length`` tokens of every sequence (what the functional ops grow)."""
        if length > self.backed:
            self.ensure_tokens([length] * self.batch)
        if length == self.backed:  # exactly full: the only case where ``ahead`` adds a token
            self.map_ahead([length] * self.batch)

    def ahead(self, lengths: list[int]) -> list[int]:
        """Lengths with one more token where a sequence's backing is exactly full.

        Mapping the next chunk as soon as the last one is full keeps the driver out of the step
        that needs it, and never holds more than one chunk past the live tokens.
        """
        if not DEFAULTS["map_ahead"]:
            return lengths
        return [n + 1 if 0 < n < self.capacity and n * self.token_bytes % self.chunk == 0 else n
                for n in lengths]

    def map_ahead(self, lengths: list[int]) -> list[int]:
        """Map the chunks ``ahead`` asks for, if memory allows: it is an optimisation only."""
        wanted = self.ahead(lengths)
        if max(wanted, default=0) > self.backed:
            try:
                self.ensure_tokens(wanted)
            except VTensorOutOfMemoryError:
                return lengths
        return wanted

    def ensure_tokens(self, lengths: list[int]) -> None:
        """Back at least lengths[b] tokens of each sequence; nothing changes if it fails."""
        worst = max(lengths, default=0)
        if worst > self.capacity:
            raise ReservationExhaustedError(
                f"virtual KV cache full: {worst} tokens needed, its reservation holds "
                f"{self.capacity} per sequence ({self.reservation.nbytes} bytes reserved); "
                "create it with a larger capacity (custom_ops.vtensor.empty(..., capacity=))")
        self.reservation.ensure(self._region_bytes(lengths))
        self._backing_changed()

    def shrink_tokens(self, lengths: list[int]) -> None:
        self.reservation.shrink(self._region_bytes(lengths))
        self._backing_changed()

    def _backing_changed(self) -> None:
        """``backed`` and the device's ``limits`` from the chunks now mapped."""
        mapped = self.mapped_tokens()
        self.backed = min(mapped)
        if mapped != self.limits_host:  # most steps of a graph decode loop change no backing
            # A pageable host source would make copy_ wait for the stream (a sync on every
            # call); a pinned one is copied in stream order, and torch keeps it alive until then.
            pinned = self.device.type == "cuda"
            self.limits.copy_(torch.tensor(mapped, dtype=torch.int64, pin_memory=pinned),
                              non_blocking=pinned)
            self.limits_host = mapped

    def _region_bytes(self, lengths: list[int]) -> dict[int, int]:
        if self.layout == "per_sequence":
            return {b: n * self.token_bytes for b, n in enumerate(lengths)}
        return {0: max(lengths, default=0) * self.token_bytes}

    def mapped_tokens(self) -> list[int]:
        reservation = self.reservation
        if self.layout == "per_sequence":
            return [min(self.capacity, reservation.mapped_bytes(b) // self.token_bytes)
                    for b in range(self.batch)]
        return [min(self.capacity, reservation.mapped_bytes(0) // self.token_bytes)] * self.batch


def lookup(tensor: torch.Tensor) -> VirtualCache | None:
    """The virtual cache whose storage ``tensor`` views, or None for an ordinary tensor."""
    storage = tensor.untyped_storage()
    ref = _REGISTRY.get((tensor.device, storage.data_ptr()))
    cache = ref() if ref is not None else None
    if cache is None or storage.nbytes() != cache.reservation.nbytes:
        return None
    return cache


def output_layout(cache: torch.Tensor, new_length: int) -> tuple[str, int | None]:
    """Layout and per-sequence region (elements) of ``vtensor_append``'s result, from metadata only.

    The fake kernel and the real one both use this, so a traced graph sees the strides that the
    real op returns: a cache already in a virtual layout keeps it; anything else gets the default.
    """
    batch, length, heads, head_dim = cache.shape
    hd = heads * head_dim
    stride = tuple(cache.stride())
    if batch > 1 and stride == (hd, batch * hd, head_dim, 1):
        return "sequence_major", None
    # max(length, 1): torch gives an empty contiguous tensor stride(0) = H * D, not a region
    if stride[1:] == (hd, head_dim, 1) and stride[0] > max(length, 1) * hd:
        return "per_sequence", stride[0]
    layout = DEFAULTS["layout"] if batch > 1 else "per_sequence"
    if layout == "sequence_major":
        return layout, None
    return layout, default_region_bytes(cache, new_length) // cache.dtype.itemsize


def default_capacity(cache: torch.Tensor, new_length: int) -> int:
    batch, _, heads, head_dim = cache.shape
    per_token = batch * heads * head_dim * cache.dtype.itemsize
    return max(DEFAULTS["reserve_bytes"] // max(per_token, 1), new_length, 1)


def default_region_bytes(cache: torch.Tensor, new_length: int) -> int:
    _, _, heads, head_dim = cache.shape
    row = heads * head_dim * cache.dtype.itemsize
    return _round_up(default_capacity(cache, new_length) * row, DEFAULTS["chunk_bytes"])


def output_strides(cache: torch.Tensor, new_length: int) -> tuple:
    batch, _, heads, head_dim = cache.shape
    hd = heads * head_dim
    layout, region = output_layout(cache, new_length)
    if layout == "sequence_major":
        return (hd, batch * hd, head_dim, 1)
    return (region, hd, head_dim, 1)
