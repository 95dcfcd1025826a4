"""Virtual-memory KV append (SPEC §3): grow a KV cache in place behind a reserved address range.

Ops (``torch.ops.custom``): ``vtensor_reserve_one_token``, ``vtensor_append`` (functional; the
result is a longer view of the same virtual storage) and ``vtensor_append_`` (in place at
device-held positions, capturable in a CUDA graph). The helpers below create caches, grow or
shrink their backing outside a graph, roll back, and report memory.
"""
import operator

import torch

from . import ops as _ops  # noqa: F401  (registers the CPU and CUDA implementations)
from .cache import DEFAULTS, LAYOUTS, VirtualCache, lookup
from .errors import (  # noqa: F401
    DriverError,
    DroppedWritesError,
    ReservationExhaustedError,
    VTensorError,
    VTensorOutOfMemoryError,
)
from .memory import all_device_memory, device_memory


# 2^47 bytes: the user half of a 48-bit virtual address space (x86-64, and what GPU drivers
# offer), so a size that cannot be reserved is refused before any driver call sees it wrap
MAX_RESERVATION_BYTES = 1 << 47


def empty(batch: int, heads: int, head_dim: int, *, capacity: int, dtype: torch.dtype,
          device, chunk_bytes: int | None = None, layout: str | None = None) -> torch.Tensor:
    """A virtual cache holding no tokens yet: returns its live view [B, 0, H, D].

    ``capacity`` tokens per sequence are reserved (address space only); physical memory is
    mapped ``chunk_bytes`` at a time (rounded up to the driver's granularity) as tokens arrive;
    by default ``DEFAULTS["chunk_bytes"]``, for sequence_major at least
    ``DEFAULTS["sequence_major_chunk_tokens"]`` tokens of the whole batch.
    """
    for name, value in (("batch", batch), ("heads", heads), ("head_dim", head_dim),
                        ("capacity", capacity)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{name} must be a positive int, got {value!r}")
    if chunk_bytes is not None and (not isinstance(chunk_bytes, int)
                                    or isinstance(chunk_bytes, bool) or chunk_bytes < 1):
        raise ValueError(f"chunk_bytes must be a positive int or None, got {chunk_bytes!r}")
    if layout is not None and layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}")
    if not isinstance(dtype, torch.dtype):
        raise TypeError(f"dtype must be a torch.dtype, got {dtype!r}")
    reserved = batch * capacity * heads * head_dim * dtype.itemsize
    if reserved > MAX_RESERVATION_BYTES:
        raise ValueError(
            f"capacity: {batch} sequences of {capacity} tokens of {heads} x {head_dim} "
            f"{dtype} reserve {reserved} bytes, more than the {MAX_RESERVATION_BYTES} bytes of "
            "address space a reservation may take")
    cache, base = VirtualCache.create(batch, heads, head_dim, dtype, torch.device(device),
                                      capacity, chunk_bytes, layout)
    return cache.view(base, 0)


def _virtual(cache: torch.Tensor, name: str) -> VirtualCache:
    if not isinstance(cache, torch.Tensor):
        raise TypeError(f"{name}: cache must be a tensor, got {type(cache).__name__}")
    virtual = lookup(cache)
    if virtual is None or not virtual.is_view(cache):
        raise ValueError(f"{name}: cache must be a view of a virtual cache "
                         "(custom_ops.vtensor.empty or vtensor_append), got an ordinary tensor")
    return virtual


def capacity_view(cache: torch.Tensor) -> torch.Tensor:
    """[B, capacity, H, D] over the whole reservation, for ``vtensor_append_`` in a graph.

    Only tokens below ``resize_backing``'s lengths are backed; read nothing beyond them.
    ``vtensor_append_`` drops (and counts) writes beyond them where it runs this package's
    implementation: eagerly, in CUDA graphs and torch.compile on CUDA, eagerly and in aclgraph
    captures on an NPU. A torchair GE graph (max-autotune) lowers the op to its AscendC node,
    which cannot know the mapping: do not pass a capacity view into one.
    """
    virtual = _virtual(cache, "capacity_view")
    return virtual.view(cache, virtual.capacity)


def _token_counts(lengths, batch: int) -> list[int] | None:
    """An int (every sequence) or a sequence of ints as a list of B ints; None for anything
    else (floats and bools included: a fractional or boolean token count is a mistake)."""
    def count(n):
        if isinstance(n, bool):
            raise TypeError
        return operator.index(n)
    try:
        return [count(lengths)] * batch
    except TypeError:
        pass
    try:
        return [count(n) for n in lengths]
    except TypeError:
        return None


def resize_backing(cache: torch.Tensor, lengths) -> None:
    """Back exactly enough chunks for lengths[b] tokens of each sequence (outside any graph).

    ``lengths``: an int (every sequence) or B ints. Growing maps chunks now; shrinking unmaps
    after the work already queued on the device is done, and never below the live length of
    the ``vtensor_append`` views (a view still held would read unmapped memory): roll them back
    with ``truncate`` first, after which the longer views must not be read. Raises
    ``ReservationExhaustedError`` or ``VTensorOutOfMemoryError`` with the backing unchanged.
    """
    virtual = _virtual(cache, "resize_backing")
    given = lengths
    lengths = _token_counts(lengths, virtual.batch)
    if lengths is None or len(lengths) != virtual.batch or min(lengths, default=0) < 0:
        raise ValueError(f"resize_backing: lengths must be an int or {virtual.batch} ints, all "
                         f"non-negative, got {given!r}")
    if min(lengths) < virtual.length:
        raise ValueError(
            f"resize_backing: lengths must be at least the live length {virtual.length} of the "
            f"cache's vtensor_append views (a held view would read unmapped memory), got "
            f"{lengths}; roll back with custom_ops.vtensor.truncate first")
    virtual.ensure_tokens(lengths)
    virtual.shrink_tokens(virtual.map_ahead(lengths))


def truncate(cache: torch.Tensor, length: int) -> torch.Tensor:
    """Roll the live length back to ``length`` tokens (speculative decoding); returns that view.

    The next ``vtensor_append`` on the returned view writes over the dropped tokens in place, so
    any longer view still held shows the new tokens there: the rollback is explicit for that
    reason. The backing stays mapped (a longer view may still be read); ``resize_backing``
    releases it, after which no view longer than the new backing may be read.
    """
    virtual = _virtual(cache, "truncate")
    if not 0 <= length <= virtual.length:
        raise ValueError(f"truncate: length must be in [0, {virtual.length}], got {length}")
    virtual.length = length
    return virtual.view(cache, length)


def check(cache: torch.Tensor) -> None:
    """Raise ``DroppedWritesError`` if ``vtensor_append_`` dropped writes past the backing.

    Reads a device counter (a sync): call it outside the hot loop.
    """
    virtual = _virtual(cache, "check")
    dropped = int(virtual.dropped.item())
    if dropped:
        raise DroppedWritesError(
            f"vtensor_append_ dropped {dropped} token writes that fell outside the mapped "
            "backing; call custom_ops.vtensor.resize_backing with the lengths before appending")


def set_memory_budget(nbytes: int | None, device="cpu") -> None:
    """Cap the physical memory virtual caches may hold on ``device`` (None: the device's own)."""
    if nbytes is not None and nbytes < 0:
        raise ValueError(f"nbytes must be non-negative or None, got {nbytes}")
    device_memory(device).budget = nbytes


def memory_stats(device=None) -> dict:
    """Reserved, mapped, pooled and pending-free bytes: of ``device``, or {device: stats} of all.

    Memory waiting on a fence is freed first where the fence has passed.
    """
    if device is not None:
        return device_memory(device).stats()
    return {str(dev): memory.stats() for dev, memory in all_device_memory().items()}


def synchronize(device=None) -> None:
    """Wait for pending frees (their fences only) and complete them."""
    memories = ([device_memory(device)] if device is not None
                else list(all_device_memory().values()))
    for memory in memories:
        memory.reap(wait=True)
