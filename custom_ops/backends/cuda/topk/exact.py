"""The exact fallback: one program's radix select of a row's top K (8-bit digits, ties by index).

It serves the rows whose sampled threshold missed (fewer than K keys reached it, or more than
the order can hold), ~340 µs a row at 64K keys; `scripts/check_cuda_fallback_rows.py` checks that
no benchmark row takes it.
"""
from __future__ import annotations

import triton
import triton.language as tl

from .keys import _mono, _pack, _unsigned


@triton.jit
def _compact_exact(row_ptr, n, dst_ptr, idx_ptr, CAP, prefix, shift, k_rem,
                   PACKED: tl.constexpr, BLOCK_N: tl.constexpr):
    """Write the keys of row[0:n] whose u >> shift is above `prefix`, and the first k_rem
    equal to it (ties to the smaller index), to dst in index order (at most CAP of them) and
    return how many were selected. PACKED: int64 keys to dst; else int32 monos to dst and
    indices to idx_ptr. (The threshold's compaction is _compact_above.)"""
    written = 0
    ties = 0
    # the next chunk is loaded before this one is scanned, so its latency hides behind the scan
    nxt = tl.load(row_ptr + tl.arange(0, BLOCK_N), mask=tl.arange(0, BLOCK_N) < n, other=0.0)
    for i0 in range(0, n, BLOCK_N):
        i = i0 + tl.arange(0, BLOCK_N)
        valid = i < n
        mono = _mono(nxt)
        nxt = tl.load(row_ptr + i + BLOCK_N, mask=i + BLOCK_N < n, other=0.0)
        top = _unsigned(mono) >> shift
        tie = valid & (top == prefix)
        tie_i = tie.to(tl.int32)
        rank = ties + tl.cumsum(tie_i, 0) - tie_i
        keep = valid & ((top > prefix) | (tie & (rank < k_rem)))
        ties += tl.sum(tie_i, 0)
        keep_i = keep.to(tl.int32)
        pos = written + tl.cumsum(keep_i, 0) - keep_i
        m = keep & (pos < CAP)
        if PACKED:
            tl.store(dst_ptr + pos, _pack(mono, i), mask=m)
        else:
            tl.store(dst_ptr + pos, mono, mask=m)
            tl.store(idx_ptr + pos, i, mask=m)
        written += tl.sum(keep_i, 0)
    return written


@triton.jit
def _radix_pass(row_ptr, n, prefix, k_rem, SHIFT: tl.constexpr, FIRST: tl.constexpr,
                BLOCK_N: tl.constexpr):
    """Digit (8 bits at SHIFT) of the k_rem-th largest key among keys whose higher bits equal
    prefix. Returns (new prefix, new k_rem, whether the boundary digit's keys are all taken)."""
    hist = tl.zeros([256], dtype=tl.int32)
    # the next chunk is loaded before this one is counted (as in _compact_exact): one program
    # per row runs this, so nothing else hides a load's latency
    nxt = tl.load(row_ptr + tl.arange(0, BLOCK_N), mask=tl.arange(0, BLOCK_N) < n, other=0.0)
    for i0 in range(0, n, BLOCK_N):
        i = i0 + tl.arange(0, BLOCK_N)
        valid = i < n
        u = _unsigned(_mono(nxt))
        nxt = tl.load(row_ptr + i + BLOCK_N, mask=i + BLOCK_N < n, other=0.0)
        if FIRST:
            match = valid
        else:
            match = valid & ((u >> (SHIFT + 8)) == prefix)
        hist += tl.histogram(((u >> SHIFT) & 255).to(tl.int32), 256, mask=match)
    bins = tl.arange(0, 256)
    at_or_above = tl.cumsum(hist, 0, reverse=True)
    d = tl.max(tl.where(at_or_above >= k_rem, bins, -1), 0)
    above = tl.sum(tl.where(bins > d, hist, 0), 0)
    in_bin = tl.sum(tl.where(bins == d, hist, 0), 0)
    k_rem = k_rem - above
    return (prefix << 8) | d.to(tl.uint32), k_rem, in_bin == k_rem


@triton.jit
def _exact_select(row_ptr, n, K, dst_ptr, idx_ptr, CAP, BLOCK_N: tl.constexpr,
                  PACKED: tl.constexpr = False):
    """Radix select (8-bit digits, stopping once the boundary digit is taken whole), then the
    exact compaction of the top K keys of row[0:n] (n > K) as (mono, index) arrays (PACKED:
    int64 keys)."""
    prefix = tl.zeros([], dtype=tl.uint32)
    k_rem = K
    prefix, k_rem, done = _radix_pass(row_ptr, n, prefix, k_rem, 24, True, BLOCK_N)
    shift = 24
    if not done:
        prefix, k_rem, done = _radix_pass(row_ptr, n, prefix, k_rem, 16, False, BLOCK_N)
        shift = 16
    if not done:
        prefix, k_rem, done = _radix_pass(row_ptr, n, prefix, k_rem, 8, False, BLOCK_N)
        shift = 8
    if not done:
        prefix, k_rem, done = _radix_pass(row_ptr, n, prefix, k_rem, 0, False, BLOCK_N)
        shift = 0
    return _compact_exact(row_ptr, n, dst_ptr, idx_ptr, CAP, prefix, shift, k_rem, PACKED,
                          BLOCK_N)
