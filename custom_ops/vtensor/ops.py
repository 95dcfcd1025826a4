"""Implementations of the three vtensor ops: CPU, CUDA, and the functional two on the NPU.

The functional ops are device-agnostic torch code over the cache views of ``cache.py``: the
device only matters to the driver below them. The in-place op is one Triton launch on CUDA
(``triton_append.py``: a CUDA graph then pays what a static cache's slice write pays), the
AscendC kernel on an NPU, and torch indexing on the CPU, with the same semantics.
"""

import torch

from ..backends import npu as _npu_backend
from .cache import RESULTS, VirtualCache, default_capacity, lookup, output_layout
from .checks import check_functional_args, check_inplace_args, check_reserve_one_token_args
from .memory import device_memory


def _live_cache(cache: torch.Tensor) -> VirtualCache | None:
    """The virtual cache if ``cache`` is exactly its live view (the in-place case), else None."""
    virtual = lookup(cache)
    if virtual is None or not virtual.is_view(cache) or virtual.length != cache.shape[1]:
        return None
    layout, region = output_layout(cache, cache.shape[1])
    if layout != virtual.layout or (region is not None and region != virtual.region_elems):
        return None
    return virtual


def _check_readable(cache: torch.Tensor) -> None:
    """A view of a virtual cache (any slice or dtype view) is copied only if every byte it reads
    is mapped: a capacity view, or a view kept from before ``resize_backing`` released the tail
    it shows, would read unmapped memory (a fault that ends the process). Checked per [B, S] row
    of the view, from its offset and strides: where the row's first and last bytes lie in the
    reservation's regions (a sequence's own, per_sequence; the one shared, sequence_major)."""
    source = lookup(cache)
    if source is None or cache.numel() == 0:
        return
    size, item = cache.shape, cache.element_size()
    stride = [st * item for st in cache.stride()]
    starts = (cache.storage_offset() * item
              + torch.arange(size[0], dtype=torch.int64)[:, None] * stride[0]
              + torch.arange(size[1], dtype=torch.int64)[None, :] * stride[1])
    ends = starts + (size[2] - 1) * stride[2] + (size[3] - 1) * stride[3] + item - 1
    reservation = source.reservation
    region = reservation.region_bytes
    regions = reservation.nbytes // region
    mapped = torch.tensor([reservation.mapped_bytes(r) for r in range(regions)],
                          dtype=torch.int64)
    first, last = starts // region, ends // region
    home = first.clamp(max=regions - 1)
    ok = (first == last) & (last < regions) & (ends < home * region + mapped[home])
    if not bool(ok.all()):
        b, t = (int(i) for i in (~ok).nonzero()[0])
        raise ValueError(
            f"vtensor_append: cache (shape {tuple(size)}, strides {tuple(cache.stride())}, "
            f"storage offset {cache.storage_offset()}) views a virtual cache and reads past the "
            f"memory mapped behind it, first at row [{b}, {t}] (its tokens with memory behind "
            f"them: {source.mapped_tokens()}; a capacity view, or a view longer than "
            "resize_backing left): pass the vtensor_append result, or "
            "custom_ops.vtensor.truncate to roll back")


def _fresh_cache(cache: torch.Tensor, new_length: int) -> tuple[VirtualCache, torch.Tensor]:
    """A new virtual cache for a plain or stale ``cache``, laid out as ``output_layout`` says."""
    batch, _, heads, head_dim = cache.shape
    layout, region = output_layout(cache, new_length)
    source = lookup(cache)
    capacity = source.capacity if source is not None else default_capacity(cache, new_length)
    chunk = source.chunk if source is not None else None
    region_bytes = None
    if region is not None:
        region_bytes = region * cache.dtype.itemsize
        if region_bytes % device_memory(cache.device).granularity:
            raise ValueError(
                f"vtensor_append: cache stride(0) = {region} elements is not a whole number of "
                "mapping granules; pass a contiguous cache or a virtual one")
    return VirtualCache.create(batch, heads, head_dim, cache.dtype, cache.device, capacity,
                               chunk_bytes=chunk, layout=layout, region_bytes=region_bytes)


def _grow(virtual: VirtualCache, like: torch.Tensor, length: int, states: torch.Tensor,
          shape: torch.Size) -> torch.Tensor:
    """Write ``states`` after the first ``length`` tokens; returns the live view, now longer.

    Two ``as_strided`` and one copy: no slicing, no driver call unless the backing ends
    within the new tokens (``ensure_all`` maps, and maps ahead at an exact chunk fill).
    ``shape`` is ``states.shape``, which the caller has already read.
    """
    new_length = length + shape[1]
    if new_length >= virtual.backed:
        virtual.ensure_all(new_length)
    strides = virtual.strides
    if virtual.batch_index is None:
        like.as_strided(shape, strides, length * strides[1]).copy_(states)
    else:  # sequences 2^31 bytes apart or more (VirtualCache.batch_index says why)
        rows = like.as_strided((virtual.batch, shape[1] * strides[1]), (strides[0], 1),
                               length * strides[1])
        rows.index_copy_(0, virtual.batch_index, states.reshape(virtual.batch, -1))
    grown_shape = (virtual.batch, new_length, virtual.heads, virtual.head_dim)
    grown = like.as_strided(grown_shape, strides, 0)
    virtual.length = new_length
    virtual.remember(grown, grown_shape)
    return grown


def _append_to_result(cache: torch.Tensor, states: torch.Tensor) -> torch.Tensor | None:
    """The per-step path: when ``cache`` is this op's last result, its shape, dtype and device
    are the cache's, so only ``states`` and the liveness are left to check. Returns the grown
    view, or None for anything else (a mismatch included, for the general path's message)."""
    virtual = RESULTS.get(id(cache))
    if virtual is None:
        return None
    shape = virtual.result_shape
    length = shape[1]
    # (the storage check catches a result re-pointed with set_ at another storage)
    if (virtual.result() is cache and virtual.length == length and cache.shape == shape
            and cache.untyped_storage().data_ptr() == virtual.reservation.address):
        shape = states.shape
        if (len(shape) == 4 and shape[0] == virtual.batch and shape[2] == virtual.heads
                and shape[3] == virtual.head_dim and states.dtype == virtual.dtype
                and states.device == virtual.device):
            return _grow(virtual, cache, length, states, shape)
    return None


def _append_checked(cache: torch.Tensor, states: torch.Tensor) -> torch.Tensor:
    """The general path, on arguments the op's checks passed: the live view grows in place, any
    other view or tensor is copied into a new virtual cache first."""
    length, shape = cache.shape[1], states.shape
    virtual = _live_cache(cache)
    if virtual is not None:
        return _grow(virtual, cache, length, states, shape)
    _check_readable(cache)
    virtual, like = _fresh_cache(cache, length + shape[1])
    virtual.ensure_all(length + shape[1])
    virtual.view(like, length).copy_(cache)
    return _grow(virtual, like, length, states, shape)


def vtensor_append(cache: torch.Tensor, states: torch.Tensor) -> torch.Tensor:
    """torch.cat([cache, states], 1) in value; in place when ``cache`` is the live virtual view.

    cache  [B, S, H, D]  states [B, T, H, D]  ->  [B, S + T, H, D], a view of virtual storage.
    A plain cache is copied once into a new virtual cache; so is a stale view (shorter or longer
    than the live one), so tokens that a live view still shows are never overwritten.
    """
    grown = _append_to_result(cache, states)
    if grown is None:
        check_functional_args(cache, states, "vtensor_append")
        grown = _append_checked(cache, states)
    return grown


def vtensor_reserve_one_token(key_cache: torch.Tensor, key_states: torch.Tensor) -> torch.Tensor:
    """The seed's op: ``vtensor_append`` of exactly one token. key_states [B, 1, H, D]."""
    if key_states.dim() == 4 and key_states.shape[1] == 1:
        # the per-step path establishes every other check of the op
        grown = _append_to_result(key_cache, key_states)
        if grown is not None:
            return grown
    check_reserve_one_token_args(key_cache, key_states)
    return _append_checked(key_cache, key_states)


def vtensor_append_(cache: torch.Tensor, states: torch.Tensor, positions: torch.Tensor) -> None:
    """cache[b, positions[b] + t] = states[b, t], in place, capturable in a CUDA graph.

    cache [B, S, H, D] (for a virtual cache, usually ``capacity_view``), states [B, T, H, D],
    positions [B] int32/int64 on the cache's device. Writes outside [0, S) are dropped; on a
    virtual cache so are writes past the mapped backing (grown with ``resize_backing`` outside
    the graph), which are counted so that ``check`` raises afterwards.
    """
    check_inplace_args(cache, states, positions)
    steps = states.shape[1]
    if steps == 0:
        return
    virtual = lookup(cache)
    if virtual is not None and not virtual.is_view(cache):
        # only the cache's own prefix views carry its backing bounds; a slice or a re-strided
        # view of its storage would write where nothing may be mapped
        raise ValueError(
            "vtensor_append_: cache views a virtual cache but is not one of its views [B, S, H, "
            f"D] (storage offset 0, strides {virtual.strides}): got storage offset "
            f"{cache.storage_offset()}, strides {tuple(cache.stride())}, shape "
            f"{tuple(cache.shape)}; pass custom_ops.vtensor.capacity_view(cache) or a "
            "vtensor_append result")
    if cache.is_cuda and (cache.stride(3) == 1 or cache.shape[3] == 1):
        from .triton_append import vtensor_append_cuda
        vtensor_append_cuda(cache, states, positions, *(
            (virtual.limits, virtual.dropped) if virtual is not None else (None, None)))
    elif cache.device.type == "npu":  # the AscendC kernel (custom_ops/csrc/npu/vtensor_append.cpp)
        if not hasattr(torch.ops.custom, "_vtensor_append_npu"):
            raise RuntimeError("vtensor_append_: the NPU kernel is not loaded: build "
                               "libcustom_ops_npu.so with scripts/build_npu.sh (docs/NPU.md)")
        torch.ops.custom._vtensor_append_npu(cache, states, positions,
                                             None if virtual is None else virtual.limits)
        if virtual is not None:  # what the kernel skipped, counted on the device (no sync)
            virtual.dropped.add_(_dropped(virtual, cache, _token_index(states, positions)).sum())
    elif virtual is not None:
        _append_virtual(virtual, cache, states, positions)
    else:
        _append_plain(cache, states, positions)


def _token_index(states: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    batch, steps = states.shape[:2]
    offsets = torch.arange(steps, device=states.device, dtype=torch.int64)
    return positions.to(torch.int64).view(batch, 1) + offsets  # [B, T]


def _dropped(virtual: VirtualCache, cache: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """[B, T]: the rows a virtual cache does not take, those outside [0, min(limits[b], S))."""
    limit = virtual.limits.clamp(max=cache.shape[1]).view(-1, 1)
    return (tokens < 0) | (tokens >= limit)


def _append_virtual(virtual: VirtualCache, cache: torch.Tensor, states: torch.Tensor,
                    positions: torch.Tensor) -> None:
    """On the CPU: the rows inside [0, min(limits[b], S)) are written, the others counted."""
    tokens = _token_index(states, positions)
    dropped = _dropped(virtual, cache, tokens)
    seq, step = (~dropped).nonzero(as_tuple=True)
    cache[seq, tokens[seq, step]] = states[seq, step]
    virtual.dropped.add_(dropped.sum())


def _append_plain(cache: torch.Tensor, states: torch.Tensor, positions: torch.Tensor) -> None:
    batch, steps = states.shape[:2]
    length = cache.shape[1]
    tokens = _token_index(states, positions)
    inside = (tokens >= 0) & (tokens < length)
    # Out-of-range tokens rewrite an in-range slot with its own value: with T <= S the slot
    # (token mod S) is never one that an in-range token of this call writes.
    safe = tokens.remainder(length)
    seq = torch.arange(batch, device=states.device).view(batch, 1).expand(batch, steps)
    kept = cache[seq, safe]
    cache.index_put_((seq, safe), torch.where(inside.view(batch, steps, 1, 1), states, kept))


_lib = torch.library.Library("custom", "IMPL")  # noqa: TOR901 - implementations of fragments
# On an NPU the functional ops run this same code over the ACL driver, and vtensor_append_ calls
# the AscendC kernel that the torch_npu extension registers (_vtensor_append_npu).
_NPU = ("PrivateUse1",) if _npu_backend.REGISTERED else ()
for _name, _fn, _keys in (("vtensor_reserve_one_token", vtensor_reserve_one_token, _NPU),
                          ("vtensor_append", vtensor_append, _NPU),
                          ("vtensor_append_", vtensor_append_, _NPU)):
    for _key in ("CPU", "CUDA") + _keys:
        _lib.impl(_name, _fn, _key)
