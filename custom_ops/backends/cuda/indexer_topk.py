"""Phase 2 of the CUDA indexer: exact top-k of each workspace row, in SPEC §1.4's order.

Selection is a radix select on order-preserving keys: a float32 score maps to an int32 `mono`
whose signed order is the float order (negative floats get their magnitude bits flipped), and
`u = mono ^ 0x80000000` orders the same way as unsigned. Three histogram passes over u
(11 + 11 + 10 bits) find the k-th largest value, stopping early once the boundary bin is taken
whole; a collect pass then keeps every key above the boundary and the first `k_rem` keys equal
to it in index order (ties to the smaller index), at positions given by prefix sums — no atomics,
so the output is deterministic. The ≤ k survivors are packed as (mono << 32) | (2^32-1 - index),
one int64 whose descending order is "score descending, index ascending", and sorted in registers.

Few, long rows (decode at small batch) split each row into G segments: stage 1 selects each
segment's top-k (in index order) into a candidate list, stage 2 selects from the G lists, which
is exact because the global top-k of a strict total order lies in the union of the segments'.
"""
from __future__ import annotations

import triton
import triton.language as tl

from .indexer_logits import batch_rows, visible_keys

# Packed key of a -inf score: below every finite score; reads back as index -1.
PAD = -2139095041 << 32
STAGE_FINAL, STAGE_SEGMENT, STAGE_MERGE = 0, 1, 2


@triton.jit
def _load_list(src_ptr, cnt_ptr, i, n, lo, STAGE: tl.constexpr, K_PAD: tl.constexpr):
    """Element i of the row's list: (unsigned order key u, key index, valid)."""
    valid = i < n
    if STAGE == 2:
        seg = i // K_PAD
        valid = valid & ((i % K_PAD) < tl.load(cnt_ptr + seg, mask=valid, other=0))
        packed = tl.load(src_ptr + i, mask=valid, other=0)
        mono = (packed >> 32).to(tl.int32)
        idx = (4294967295 - (packed & 4294967295)).to(tl.int32)
    else:
        x = tl.load(src_ptr + i, mask=valid, other=0.0)
        bits = x.to(tl.int32, bitcast=True)
        mono = tl.where(bits < 0, bits ^ 2147483647, bits)
        idx = lo + i
    u = (mono ^ -2147483648).to(tl.uint32, bitcast=True)
    return u, mono, idx, valid


@triton.jit
def _radix_pass(src_ptr, cnt_ptr, n, lo, prefix, k_rem, STAGE: tl.constexpr, K_PAD: tl.constexpr,
                SHIFT: tl.constexpr, WIDTH: tl.constexpr, FIRST: tl.constexpr,
                BLOCK_N: tl.constexpr, NB: tl.constexpr):
    """One histogram pass: the digit (bits SHIFT..SHIFT+WIDTH) of the k_rem-th largest key among
    keys whose higher bits equal prefix. Returns (new prefix, new k_rem, boundary bin is whole)."""
    hist = tl.zeros([NB], dtype=tl.int32)
    for i0 in range(0, n, BLOCK_N):
        u, mono, idx, valid = _load_list(src_ptr, cnt_ptr, i0 + tl.arange(0, BLOCK_N), n, lo,
                                         STAGE, K_PAD)
        if FIRST:
            match = valid
        else:
            match = valid & ((u >> (SHIFT + WIDTH)) == prefix)
        digit = ((u >> SHIFT) & ((1 << WIDTH) - 1)).to(tl.int32)
        hist += tl.histogram(digit, NB, mask=match)
    bins = tl.arange(0, NB)
    at_or_above = tl.cumsum(hist, 0, reverse=True)
    d = tl.max(tl.where(at_or_above >= k_rem, bins, -1), 0)
    above = tl.sum(tl.where(bins > d, hist, 0), 0)
    in_bin = tl.sum(tl.where(bins == d, hist, 0), 0)
    k_rem = k_rem - above
    prefix = (prefix << WIDTH) | d.to(tl.uint32)
    return prefix, k_rem, in_bin == k_rem


@triton.jit
def _select(src_ptr, cnt_ptr, dst_ptr, n, total, lo, K, STAGE: tl.constexpr,
            K_PAD: tl.constexpr, BLOCK_N: tl.constexpr, NB: tl.constexpr):
    """Write the packed keys of the list's top min(K, total), in list order, to dst; return the
    count. The list has n slots, `total` of them valid."""
    prefix = tl.zeros([], dtype=tl.uint32)
    k_rem = K
    level = 32
    take_all = total <= K
    done = take_all
    if not done:
        prefix, k_rem, done = _radix_pass(src_ptr, cnt_ptr, n, lo, prefix, k_rem, STAGE, K_PAD,
                                          21, 11, True, BLOCK_N, NB)
        level = 21
    if not done:
        prefix, k_rem, done = _radix_pass(src_ptr, cnt_ptr, n, lo, prefix, k_rem, STAGE, K_PAD,
                                          10, 11, False, BLOCK_N, NB)
        level = 10
    if not done:
        prefix, k_rem, done = _radix_pass(src_ptr, cnt_ptr, n, lo, prefix, k_rem, STAGE, K_PAD,
                                          0, 10, False, BLOCK_N, NB)
        level = 0
    shift = tl.minimum(level, 31)  # level 32 only with take_all, where the keys are not compared
    ties_seen = 0
    written = 0
    for i0 in range(0, n, BLOCK_N):
        u, mono, idx, valid = _load_list(src_ptr, cnt_ptr, i0 + tl.arange(0, BLOCK_N), n, lo,
                                         STAGE, K_PAD)
        hi = u >> shift
        tie = valid & (hi == prefix)
        tie_i = tie.to(tl.int32)
        rank = ties_seen + tl.cumsum(tie_i, 0) - tie_i
        keep = valid & (take_all | (hi > prefix) | (tie & (rank < k_rem)))
        keep_i = keep.to(tl.int32)
        pos = written + tl.cumsum(keep_i, 0) - keep_i
        packed = (mono.to(tl.int64) << 32) | (4294967295 - idx.to(tl.int64))
        tl.store(dst_ptr + pos, packed, mask=keep)
        ties_seen += tl.sum(tie_i, 0)
        written += tl.sum(keep_i, 0)
    return written


@triton.jit
def _indexer_topk_kernel(
        src_ptr, stride_src,  # STAGE 0/1: logits fp32 [R, CAP]; STAGE 2: candidates int64 [R, G, K_PAD]
        cnt_ptr,  # int32 [R, G]: candidates per segment (written by stage 1, read by stage 2)
        cand_ptr,  # int64 [R, G, K_PAD]: stage 1 output; stage 0/2 sort scratch [R, K_PAD]
        idx_ptr, val_ptr,  # int32 / fp32 [R, K] outputs (stage 0/2)
        asq_ptr, ask_ptr, md_ptr, err_ptr,
        B, S1, T, CAP, K, CMP,
        CAUSAL: tl.constexpr, TND: tl.constexpr, HAS_ASQ: tl.constexpr,
        LEADING_ZERO: tl.constexpr, RETURN_VALUE: tl.constexpr, STAGE: tl.constexpr,
        G: tl.constexpr, K_PAD: tl.constexpr, BLOCK_N: tl.constexpr, NB: tl.constexpr,
        BLOCK_B: tl.constexpr, PAD_KEY: tl.constexpr):
    r = tl.program_id(0)
    g = tl.program_id(1)
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
    covered = (q_block == 0) | (s < q_block * tl.load(md_ptr + 7))
    live = live & (s >= 0) & (s < s1) & covered
    n = tl.where(live, tl.minimum(visible_keys(s, s1, s2, CMP, CAUSAL), CAP), 0)

    if STAGE == 1:
        seg = tl.cdiv(tl.cdiv(n, G), BLOCK_N) * BLOCK_N
        lo = g * seg
        m = tl.maximum(tl.minimum(lo + seg, n) - lo, 0)
        dst = cand_ptr + (r64 * G + g) * K_PAD
        cnt = _select(src_ptr + r64 * stride_src + lo, cnt_ptr, dst, m, m, lo, K, STAGE, K_PAD,
                      BLOCK_N, NB)
        tl.store(cnt_ptr + r64 * G + g, cnt)
    else:
        dst = cand_ptr + r64 * K_PAD
        if STAGE == 2:
            m = tl.where(live, G * K_PAD, 0)
            total = tl.sum(tl.load(cnt_ptr + r64 * G + tl.arange(0, G)), 0)
            cnt = _select(src_ptr + r64 * stride_src, cnt_ptr + r64 * G, dst, m, total, 0, K,
                          STAGE, K_PAD, BLOCK_N, NB)
        else:
            cnt = _select(src_ptr + r64 * stride_src, cnt_ptr, dst, n, n, 0, K, STAGE, K_PAD,
                          BLOCK_N, NB)
        offs = tl.arange(0, K_PAD)
        packed = tl.load(dst + offs, mask=offs < cnt, other=PAD_KEY)
        packed = tl.sort(packed, descending=True)
        keep = (offs < cnt) & (packed > PAD_KEY)
        idx = (4294967295 - (packed & 4294967295)).to(tl.int32)
        tl.store(idx_ptr + r64 * K + offs, tl.where(keep, idx, -1), mask=offs < K)
        if RETURN_VALUE:
            mono = (packed >> 32).to(tl.int32)
            bits = tl.where(mono < 0, mono ^ 2147483647, mono)
            val = bits.to(tl.float32, bitcast=True)
            tl.store(val_ptr + r64 * K + offs, tl.where(keep, val, float("-inf")), mask=offs < K)
