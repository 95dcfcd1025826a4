"""Phase 2, step 1: each row's threshold t0 from a strided sample of its scores (grid: rows).

About sqrt(k·CAP) scores reach t0, the geometric middle of [k, CAP]; with buckets the kernel also
writes the map of candidates onto NB buckets (linear in the score) that segments and place read.
"""
from __future__ import annotations

import triton
import triton.language as tl

from ..indexer_logits import SAMPLE_EVERY, batch_rows, visible_keys
from .keys import (INF_MONO, INT32_MAX, INT32_MIN, THR_BASE, THR_N, THR_SCALE, THR_T0,
                   _dependent_start, _mono, _score_of, _signed, _unsigned)


@triton.jit
def _bisection(u, need, BITS: tl.constexpr, STEP: tl.constexpr):
    """The largest v whose low 32 - BITS bits are zero and which at least `need` of the samples
    u reach, one block reduction per STEP bits. STEP 2: the three pivots' counts packed into
    one int64 sum (21 bits each; NS < 2^21), half the serial reductions for the same result
    (counts fall as the pivot rises, so the largest pivot still reached by `need` samples is
    what two 1-bit steps pick)."""
    best = tl.zeros([], dtype=tl.uint32)
    if STEP == 2:
        for bit in tl.static_range(31, 31 - BITS, -2):
            c1 = best + tl.full([], 1 << (bit - 1), tl.uint32)
            c2 = best + tl.full([], 2 << (bit - 1), tl.uint32)
            c3 = best + tl.full([], 3 << (bit - 1), tl.uint32)
            packed = ((u >= c1).to(tl.int64) + ((u >= c2).to(tl.int64) << 21)
                      + ((u >= c3).to(tl.int64) << 42))
            counts = tl.sum(packed, 0)
            best = tl.where((counts >> 42) >= need, c3,
                            tl.where(((counts >> 21) & 2097151) >= need, c2,
                                     tl.where((counts & 2097151) >= need, c1, best)))
    else:
        for bit in tl.static_range(31, 31 - BITS, -1):
            cand = best + tl.full([], 1 << bit, tl.uint32)
            if tl.sum((u >= cand).to(tl.int32), 0) >= need:
                best = cand
    return best


@triton.jit
def _per_warp_estimate(u, sm, need, sampled, NS: tl.constexpr, BITS: tl.constexpr,
                       WARPS: tl.constexpr):
    """t0 as the mean of WARPS independent estimates, each bisected over the samples one warp
    holds (every 32·WARPS-th sample from its lanes' offset: a strided sample of the row too)
    for its share of `need`. A warp's counts are warp reductions, so the serial steps need no
    block barrier; the mean is as good an estimate as the whole sample's (simulated: the same
    spread of candidate counts, NOTES). The ordering is exact whatever t0 is.
    The mean is taken of the scores, not of their monotone integers: those are log-like in the
    magnitude and jump at zero, so where the threshold lies near zero (most scores negative)
    an estimate of -0.005 among others of +0.05 pulled their integer mean to ~1e-11 and every
    positive score became a candidate (rows past CAP, each one the exact fallback's)."""
    R: tl.constexpr = NS // (32 * WARPS)
    # sample e is in register e // (32·WARPS), warp (e // 32) % WARPS, lane e % 32
    u3 = tl.reshape(u, [R, WARPS, 32])
    valid = tl.sum(tl.sum(tl.reshape(sm.to(tl.int32), [R, WARPS, 32]), 0), 1)
    need_w = tl.cdiv(need * valid, sampled)
    best = tl.zeros([WARPS], tl.uint32)
    for bit in tl.static_range(31, 31 - BITS, -1):
        cand = best + tl.full([WARPS], 1 << bit, tl.uint32)
        c = tl.sum(tl.sum((u3 >= cand[None, :, None]).to(tl.int32), 0), 1)  # registers first
        best = tl.where(c >= need_w, cand, best)
    mean = tl.sum(_score_of(_signed(best)), 0) / WARPS
    return (_unsigned(_mono(mean)) >> (32 - BITS)) << (32 - BITS)


@triton.jit
def _snap(u, best):
    """The smallest sample at or above `best`: t0 a score that a key has, so that the keys tied
    at the threshold are exactly those at t0 (segments keep the keys above it; place and merge
    fill with keys at it). An unsampled slot is 0: below `best`, or `best` itself when that is
    0, so no mask (a mask cost 22 registers and half the programs per SM)."""
    return tl.min(tl.where(u >= best, u, tl.full(u.shape, 4294967295, tl.uint32)), 0)


@triton.jit
def _sample_source(n, NS: tl.constexpr):
    """How a row of n keys is sampled: every stride-th key, read every step-th word of the row
    (copy false) or of phase 1's copy of every SAMPLE_EVERY-th score (copy true)."""
    stride = tl.cdiv(n, NS)
    copy = stride >= SAMPLE_EVERY
    step = tl.where(copy, tl.cdiv(stride, SAMPLE_EVERY), stride)
    return tl.where(copy, step * SAMPLE_EVERY, stride), step, copy


@triton.jit
def _load_sample(row_ptr, samp_ptr, n, NS: tl.constexpr):
    """The row's sample (_sample_source) as unsigned order keys, 0 in unsampled slots."""
    stride, step, copy = _sample_source(n, NS)
    si = tl.arange(0, NS)
    sm = si * stride < n
    src = row_ptr
    if copy:
        src = samp_ptr
    u = _unsigned(_mono(tl.load(src + si * step, mask=sm, other=0.0)))
    return tl.where(sm, u, tl.zeros([NS], tl.uint32))


@triton.jit
def _sample_threshold(row_ptr, samp_ptr, n, K, TARGET, NS: tl.constexpr, BITS: tl.constexpr,
                      STEP: tl.constexpr, WARPS: tl.constexpr, u_wide, n_wide):
    """(t0, bucket base, largest non-NaN sampled mono). t0: mono of the sample score of
    descending rank ~TARGET/stride: about TARGET scores reach it; the base is t0. A row of
    n <= K keys (all sampled, K <= NS) takes every key: t0 is INT32_MIN and the base its
    smallest mono.
    Only the top BITS bits are bisected (the rest stay 0: a slightly lower threshold, a few more
    candidates): per warp (WARPS > 0) where the sample has room to spare, else over the whole
    sample, one serial block reduction per step. (A [NS, 16] comparison per 4-bit step was
    tried: it spills and cost ~200 µs per row.) `u_wide`: the sample of a row of n_wide keys,
    loaded before n was known; it is this row's where both sample alike (the same stride),
    past n masked off."""
    stride, _, _ = _sample_source(n, NS)
    si = tl.arange(0, NS)
    sm = si * stride < n
    # unsigned order as uint32 (4 bytes a sample: few warps can hold the whole sample);
    # bisect from the most significant bit down; an unsampled slot is 0, below every pivot
    if stride == _sample_source(n_wide, NS)[0]:
        u = tl.where(sm, u_wide, tl.zeros([NS], tl.uint32))
    else:
        u = _load_sample(row_ptr, samp_ptr, n, NS)
    best = tl.zeros([], dtype=tl.uint32)
    if n > K:  # else every key is a candidate: no threshold, only the sample's extremes
        sampled = tl.cdiv(n, stride)  # the samples si·stride < n (at most NS)
        need = tl.minimum(tl.cdiv(TARGET, stride), sampled)
        # one bisection in the code, whichever way it is reached: each copy of its unrolled
        # steps is code that every SM fetches cold (B=64, 4K keys: +3 µs a call with three)
        bisect = True
        if WARPS > 0:
            if (2 * need <= sampled) & (2 * sampled >= NS):
                best = _per_warp_estimate(u, sm, need, sampled, NS, BITS, WARPS)
                # a mean of the warps' estimates can fall between two of a few distinct scores
                # (rows of repeated keys), far from `need`: the whole sample's count at it must
                # lie between need and the counts that stand for K and CAP keys (halfway to
                # each), else the whole sample is bisected (B=64, 64K keys of 64 distinct
                # values: rows with fewer than K candidates took the exact fallback, 663 µs a
                # call against 188)
                c = tl.sum(((u >= best) & sm).to(tl.int32), 0)
                low = (need + tl.cdiv(K, stride)) // 2
                high = (need + tl.cdiv(TARGET * TARGET // K, stride)) // 2  # TARGET² / K: CAP
                bisect = (c < low) | (c > high)
        if bisect:
            best = _bisection(u, need, BITS, STEP)
        best = _snap(u, best)
    # capped below INT32_MAX (the mono of NVIDIA's NaN, 0x7FFFFFFF): the segments keep the
    # keys above t0, and nothing lies above INT32_MAX, so keys at it would be kept as
    # candidates and taken again as ties at t0 (duplicate indices in rows of many NaN scores)
    t0 = tl.where(n > K, tl.minimum(_signed(best), INT32_MAX - 1), INT32_MIN)
    base = t0
    if n <= K:  # the smallest score is the base (one block reduction only for such rows)
        lo = tl.min(tl.where(sm, u, tl.full([NS], 4294967295, tl.uint32)), 0)
        base = _signed(lo)
    # the largest finite (or infinite) sample: a NaN would stretch the bucket span to +inf
    top = tl.max(tl.where(u <= tl.full([], 4286578688, tl.uint32), u, 0), 0)  # +inf, unsigned
    return t0, base, _signed(top)


@triton.jit
def _bucket(mono, base, scale, NB: tl.constexpr):
    """Bucket of a candidate: floor((score - base) · scale), clamped to [0, NB): linear in the
    score, so that the sampled span [base, largest sampled score] fills the NB buckets evenly
    in value. (A map linear in the mono, i.e. in the float's bits, put rows whose candidates
    cross zero — short rows, where k is a large share of the keys — into a few buckets of
    hundreds: the bits of scores between 1e-3 and 1 span a few of 1024 buckets when the span
    runs from -1 to 1.) Monotone in the mono: float subtraction and scaling keep the order,
    a NaN product (inf · 0) and every score below base go to bucket 0, NaNs with the sign bit
    clear (above +inf in mono order) to the top bucket, those with it set (below -inf) to 0."""
    x = (_score_of(mono) - base) * scale
    x = tl.where(x > 0, x, 0.0)  # NaN compares false
    b = tl.where(x < NB - 1, x, NB - 1).to(tl.int32)
    return tl.where(mono > INF_MONO, NB - 1, b)


@triton.jit
def _bucket_map(thr_ptr, r):
    """Row r's bucket base score and scale (the threshold kernel's record)."""
    base = tl.load(thr_ptr + 4 * r + THR_BASE).to(tl.float32, bitcast=True)
    return base, tl.load(thr_ptr + 4 * r + THR_SCALE).to(tl.float32, bitcast=True)


@triton.jit
def _row_keys(r, asq_ptr, ask_ptr, md_ptr, err_ptr, B, S1, T, CAP_KEYS, CMP,
              CAUSAL: tl.constexpr, TND: tl.constexpr, HAS_ASQ: tl.constexpr,
              LEADING_ZERO: tl.constexpr, BLOCK_B: tl.constexpr):
    """Keys workspace row r holds (0 for rows with nothing to select): which batch and token
    the row is (SPEC §1.2), how many keys it sees (§1.3), and whether phase 1 scheduled it."""
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
    return tl.where(live, tl.minimum(visible_keys(s, s1, s2, CMP, CAUSAL), CAP_KEYS), 0)


@triton.jit
def _indexer_threshold_kernel(
        logits_ptr, stride_l,  # fp32 [R, CAP_KEYS logits, then the row's sample] (phase 1)
        thr_ptr,  # int32 [R, 4]: (keys the row sees, threshold t0, bucket base, bucket scale)
        bcnt_ptr,  # int32 [R, 2, NB]: bucket counts and cursors, zeroed here (NB > 0)
        asq_ptr, ask_ptr, md_ptr, err_ptr,
        B, S1, T, CAP_KEYS, K, TARGET, CMP,  # TARGET: candidates the threshold aims at
        CAUSAL: tl.constexpr, TND: tl.constexpr, HAS_ASQ: tl.constexpr,
        LEADING_ZERO: tl.constexpr, NS: tl.constexpr, BITS: tl.constexpr, STEP: tl.constexpr,
        WARPS: tl.constexpr, NB: tl.constexpr, BLOCK_B: tl.constexpr, PDL: tl.constexpr):
    """Row r: how many keys it sees and t0; with buckets (NB > 0), the map of candidates to
    NB buckets (_bucket): base = the score at t0 (or the row's smallest score when every key
    is a candidate) and the scale that spreads [base, largest finite sampled score] over the
    NB buckets."""
    _dependent_start(PDL)
    r = tl.program_id(0)
    row_ptr = logits_ptr + r.to(tl.int64) * stride_l
    # the sample as if the row held all CAP_KEYS keys, loaded while the row's own count is on
    # its way (its loads and this one in one round trip wherever both sample alike: rows of
    # more than half the widest row's keys, at 64K keys and up)
    u_wide = _load_sample(row_ptr, row_ptr + CAP_KEYS, CAP_KEYS, NS)
    n = _row_keys(r, asq_ptr, ask_ptr, md_ptr, err_ptr, B, S1, T, CAP_KEYS, CMP, CAUSAL, TND,
                  HAS_ASQ, LEADING_ZERO, BLOCK_B)
    t0 = INT32_MIN
    base = INT32_MIN
    top = INT32_MIN
    if (n > K) | ((NB > 0) & (n > 0)):
        t0, base, top = _sample_threshold(row_ptr, row_ptr + CAP_KEYS, n, K, TARGET, NS, BITS,
                                          STEP, WARPS, u_wide, CAP_KEYS)
    tl.store(thr_ptr + 4 * r + THR_N, n)
    tl.store(thr_ptr + 4 * r + THR_T0, t0)
    if NB > 0:
        base_score = _score_of(base)
        span = _score_of(tl.minimum(top, INF_MONO)) - base_score
        scale = tl.where(span > 0, NB / span, 0.0)  # inf where span is tiny: still monotone
        tl.store(thr_ptr + 4 * r + THR_BASE, base_score.to(tl.int32, bitcast=True))
        tl.store(thr_ptr + 4 * r + THR_SCALE, scale.to(tl.int32, bitcast=True))
        # the row's counts and cursors are one contiguous run of 2·NB
        tl.store(bcnt_ptr + r.to(tl.int64) * (2 * NB) + tl.arange(0, 2 * NB),
                 tl.zeros([2 * NB], tl.int32))
