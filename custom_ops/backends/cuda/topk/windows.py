"""SPEC §1.6 in CUDA graphs: a window's top-k merged into the top-k of the keys before it."""
from __future__ import annotations

import triton
import triton.language as tl

from .keys import _mono, _store_padding


@triton.jit
def _valid_prefix(idx_ptr, K, K_PAD: tl.constexpr):
    """Entries of a sorted top-k row before its -1 padding."""
    offs = tl.arange(0, K_PAD)
    return tl.sum((tl.load(idx_ptr + offs, mask=offs < K, other=-1) >= 0).to(tl.int32), 0)


@triton.jit
def _beaten_by(val_ptr, n, mono, OR_EQUAL: tl.constexpr, LOG_K: tl.constexpr):
    """How many of the n leading entries of a row sorted by descending score have a mono above
    `mono` (OR_EQUAL: at or above): the length of that prefix, by binary search."""
    lo = tl.zeros_like(mono)
    hi = tl.zeros_like(mono) + n
    for _ in tl.static_range(LOG_K + 1):
        mid = (lo + hi) // 2
        m = _mono(tl.load(val_ptr + mid, mask=mid < hi, other=0.0))
        if OR_EQUAL:
            up = (mid < hi) & (m >= mono)
        else:
            up = (mid < hi) & (m > mono)
        lo = tl.where(up, mid + 1, lo)
        hi = tl.where(up, hi, mid)
    return lo


@triton.jit
def _indexer_window_merge_kernel(
        a_idx_ptr, a_val_ptr,  # int32 / fp32 [R, K]: top-k of the keys before this window
        b_idx_ptr, b_val_ptr,  # int32 / fp32 [R, K]: top-k of this window, indices from OFFSET
        out_idx_ptr, out_val_ptr,  # int32 / fp32 [R, K]: top-k of both
        K, OFFSET, RETURN_VALUE: tl.constexpr, K_PAD: tl.constexpr, LOG_K: tl.constexpr,
        BLOCK: tl.constexpr):
    """Merge two sorted top-k lists of a row into the top-k of their union, in SPEC §1.4's order.
    Every index of A is below every index of B, so at equal scores A's entry comes first: an
    entry's place is its own rank plus the entries of the other list that beat it (B's with a
    higher score; A's with a higher or equal one), found by binary search. Each output position
    is written by exactly one entry, or padded."""
    r64 = tl.program_id(0).to(tl.int64)
    i = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    a_idx = a_idx_ptr + r64 * K
    b_idx = b_idx_ptr + r64 * K
    a_val = a_val_ptr + r64 * K
    b_val = b_val_ptr + r64 * K
    na = _valid_prefix(a_idx, K, K_PAD)
    nb = _valid_prefix(b_idx, K, K_PAD)
    out_i = out_idx_ptr + r64 * K
    out_v = out_val_ptr + r64 * K
    for side in tl.static_range(2):
        if side == 0:
            mine = i < na
            val = tl.load(a_val + i, mask=mine, other=0.0)
            idx = tl.load(a_idx + i, mask=mine, other=-1)
            pos = i + _beaten_by(b_val, nb, _mono(val), False, LOG_K)
        else:
            mine = i < nb
            val = tl.load(b_val + i, mask=mine, other=0.0)
            idx = tl.load(b_idx + i, mask=mine, other=-1) + OFFSET
            pos = i + _beaten_by(a_val, na, _mono(val), True, LOG_K)
        put = mine & (pos < K)
        tl.store(out_i + pos, idx, mask=put)
        if RETURN_VALUE:
            tl.store(out_v + pos, val, mask=put)
    _store_padding(out_i, out_v, i, (i >= na + nb) & (i < K), RETURN_VALUE)
