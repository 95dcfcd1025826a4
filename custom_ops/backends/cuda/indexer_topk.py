"""Phase 2 of the CUDA indexer: exact top-k of each workspace row, in SPEC §1.4's order.

A score maps to an int32 `mono` whose signed order is the float order (negative floats get their
magnitude bits flipped), and a key to the int64 (mono << 32) | (2^32-1 - index), whose descending
order is "score descending, then index ascending": sorting packed keys gives SPEC's order exactly,
ties included, with no atomics deciding anything.

Select (one program per row) writes a superset of the row's top-k, at most CAP = 2·K_PAD packed
keys, padded with PAD: a strided sample of NS scores gives, by bisection on its bits, a threshold
t0 that about 1.5·k scores reach, and one pass compacts every key with mono >= t0 in index order
(prefix sums give the positions). If that misses [k, CAP] (heavy ties, adversarial rows), an exact
radix select on 8-bit digits finds the k-th key and the same compaction keeps exactly k. The
launcher then sorts the CAP keys per row with torch.sort (a shared-memory bitonic sort per row,
much faster than a register sort of that size in Triton) and `unpack` writes the first k.
"""
from __future__ import annotations

import triton
import triton.language as tl

from .indexer_logits import batch_rows, visible_keys

# Packed key of a -inf score: below every finite score; reads back as index -1.
PAD = -2139095041 << 32
INT32_MIN = tl.constexpr(-2147483648)


@triton.jit
def _mono(x):
    bits = x.to(tl.int32, bitcast=True)
    return tl.where(bits < 0, bits ^ 2147483647, bits)


@triton.jit
def _pack(mono, idx):
    return (mono.to(tl.int64) << 32) | (4294967295 - idx.to(tl.int64))


@triton.jit
def _compact(row_ptr, n, dst_ptr, CAP, t_mono, prefix, shift, k_rem, EXACT: tl.constexpr,
             BLOCK_N: tl.constexpr):
    """Write the packed keys of the selected scores of row[0:n] to dst in index order (at most
    CAP of them); return how many were selected. Not EXACT: scores with mono >= t_mono. EXACT:
    keys whose u >> shift is above `prefix`, and the first k_rem equal to it (ties to smaller index)."""
    written = 0
    ties = 0
    for i0 in range(0, n, BLOCK_N):
        i = i0 + tl.arange(0, BLOCK_N)
        valid = i < n
        mono = _mono(tl.load(row_ptr + i, mask=valid, other=0.0))
        if EXACT:
            hi = (mono ^ INT32_MIN).to(tl.uint32, bitcast=True) >> shift
            tie = valid & (hi == prefix)
            tie_i = tie.to(tl.int32)
            rank = ties + tl.cumsum(tie_i, 0) - tie_i
            keep = valid & ((hi > prefix) | (tie & (rank < k_rem)))
            ties += tl.sum(tie_i, 0)
        else:
            keep = valid & (mono >= t_mono)
        keep_i = keep.to(tl.int32)
        pos = written + tl.cumsum(keep_i, 0) - keep_i
        tl.store(dst_ptr + pos, _pack(mono, i), mask=keep & (pos < CAP))
        written += tl.sum(keep_i, 0)
    return written


@triton.jit
def _radix_pass(row_ptr, n, prefix, k_rem, SHIFT: tl.constexpr, FIRST: tl.constexpr,
                BLOCK_N: tl.constexpr):
    """Digit (8 bits at SHIFT) of the k_rem-th largest key among keys whose higher bits equal
    prefix. Returns (new prefix, new k_rem, whether the boundary digit's keys are all taken)."""
    hist = tl.zeros([256], dtype=tl.int32)
    for i0 in range(0, n, BLOCK_N):
        i = i0 + tl.arange(0, BLOCK_N)
        valid = i < n
        u = (_mono(tl.load(row_ptr + i, mask=valid, other=0.0)) ^ INT32_MIN).to(tl.uint32, bitcast=True)
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
def _exact_select(row_ptr, n, K, dst_ptr, CAP, BLOCK_N: tl.constexpr):
    """Radix select (8-bit digits, stopping once the boundary digit is taken whole), then the
    exact compaction of the top K keys of row[0:n] (n > K)."""
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
    return _compact(row_ptr, n, dst_ptr, CAP, 0, prefix, shift, k_rem, True, BLOCK_N)


@triton.jit
def _sample_threshold(row_ptr, n, K, NS: tl.constexpr):
    """mono of the sample score of descending rank ~1.5·K/stride: about 1.5·K scores reach it."""
    stride = tl.cdiv(n, NS)
    si = tl.arange(0, NS)
    sm = si * stride < n
    # unsigned order as int64 in [0, 2^32): bisect one bit at a time, most significant first
    u = _mono(tl.load(row_ptr + si * stride, mask=sm, other=0.0)).to(tl.int64) + 2147483648
    u = tl.where(sm, u, -1)
    need = tl.minimum(tl.cdiv(3 * K, 2 * stride), tl.sum(sm.to(tl.int32), 0))
    best = tl.zeros([], dtype=tl.int64)
    for bit in tl.static_range(31, -1, -1):
        cand = best + (1 << bit)
        if tl.sum((u >= cand).to(tl.int32), 0) >= need:
            best = cand
    return (best - 2147483648).to(tl.int32)


@triton.jit
def _indexer_select_kernel(
        logits_ptr, stride_l,  # fp32 [R, CAP_KEYS] (phase 1's workspace)
        cand_ptr,  # int64 [R, 2 * K_PAD]: packed candidates of each row, PAD-filled
        asq_ptr, ask_ptr, md_ptr, err_ptr,
        B, S1, T, CAP_KEYS, K, CMP,
        CAUSAL: tl.constexpr, TND: tl.constexpr, HAS_ASQ: tl.constexpr,
        LEADING_ZERO: tl.constexpr, K_PAD: tl.constexpr, NS: tl.constexpr,
        BLOCK_N: tl.constexpr, BLOCK_B: tl.constexpr, PAD_KEY: tl.constexpr):
    r = tl.program_id(0)
    r64 = r.to(tl.int64)
    # Which batch and token this row is (SPEC §1.2), and how many keys it sees (§1.3).
    if TND:
        bs = tl.arange(0, BLOCK_B)
        if LEADING_ZERO:
            ends = tl.load(asq_ptr + 1 + bs, mask=bs < B, other=2147483647)
        else:
            ends = tl.load(asq_ptr + bs, mask=bs < B, other=2147483647)
        b = tl.sum((tl.minimum(ends, T) <= r).to(tl.int32), 0)
    else:
        b = r // S1
    live = (b < B) & (tl.load(err_ptr) == 0)
    b = tl.minimum(b, B - 1)
    row0, s1 = batch_rows(asq_ptr, b, S1, T, HAS_ASQ, TND, LEADING_ZERO)
    s = r - row0
    s2 = tl.load(ask_ptr + b)
    q_block = tl.load(md_ptr + 3)
    covered = (q_block == 0) | (s < q_block * tl.load(md_ptr + 7))  # scheduled by phase 1
    live = live & (s >= 0) & (s < s1) & covered
    n = tl.where(live, tl.minimum(visible_keys(s, s1, s2, CMP, CAUSAL), CAP_KEYS), 0)

    row_ptr = logits_ptr + r64 * stride_l
    dst = cand_ptr + r64 * (2 * K_PAD)
    CAP: tl.constexpr = 2 * K_PAD
    if n <= K:
        cnt = _compact(row_ptr, n, dst, CAP, INT32_MIN, 0, 0, 0, False, BLOCK_N)
    else:
        t0 = _sample_threshold(row_ptr, n, K, NS)
        cnt = _compact(row_ptr, n, dst, CAP, t0, 0, 0, 0, False, BLOCK_N)
        if (cnt < K) | (cnt > CAP):
            cnt = _exact_select(row_ptr, n, K, dst, CAP, BLOCK_N)
    offs = cnt + tl.arange(0, CAP)
    tl.store(dst + offs, tl.full([CAP], PAD_KEY, tl.int64), mask=offs < CAP)


@triton.jit
def _indexer_unpack_kernel(
        sorted_ptr, stride_s,  # int64 [R, >= K]: each row's packed keys, descending
        idx_ptr, val_ptr,  # int32 / fp32 [R, K]
        K, RETURN_VALUE: tl.constexpr, BLOCK: tl.constexpr, PAD_KEY: tl.constexpr):
    r64 = tl.program_id(0).to(tl.int64)
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    m = offs < K
    packed = tl.load(sorted_ptr + r64 * stride_s + offs, mask=m, other=PAD_KEY)
    keep = packed > PAD_KEY
    idx = (4294967295 - (packed & 4294967295)).to(tl.int32)
    tl.store(idx_ptr + r64 * K + offs, tl.where(keep, idx, -1), mask=m)
    if RETURN_VALUE:
        mono = (packed >> 32).to(tl.int32)
        val = tl.where(mono < 0, mono ^ 2147483647, mono).to(tl.float32, bitcast=True)
        tl.store(val_ptr + r64 * K + offs, tl.where(keep, val, float("-inf")), mask=m)
