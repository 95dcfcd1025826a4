"""Phase 2 of the CUDA indexer: exact top-k of each workspace row, in SPEC §1.4's order.

A score maps to an int32 `mono` whose signed order is the float order (negative floats get their
magnitude bits flipped). Descending (mono, then index ascending) is SPEC's order, ties included:
the int64 key (mono << 32) | (2^32-1 - index) orders exactly so; no atomic decides where a key
lands in the output.

1. Threshold (grid rows): t0 from a strided sample of NS scores (bisection on its bits: about
   sqrt(k·CAP) scores reach it, the geometric middle of [k, CAP]). Segments (grid rows × G):
   each program compacts the keys of its segment with mono >= t0, in index order, into its own
   slot (at most CAP) and writes how many it found. G programs per row keep one long row (B=1)
   on many SMs.
2. Order, two ways chosen by row count (the same result):
   - buckets (up to TopkConfig.bucket_max_rows rows): the threshold kernel also maps
     [t0, largest sampled score] onto NB buckets (monotone in mono); the segment kernel counts
     its candidates per bucket (atomic integer sums); `place` gives each bucket a group of slots
     after all higher buckets and moves each candidate into its group (an atomic cursor picks
     the slot inside the group, which decides nothing); `rank` puts each candidate at its
     group's first slot plus the number of larger keys in its group. Latency-bound launches
     spread over the GPU: at 8–128 rows quicker than a sort's one block per row.
   - sort (more rows): `merge` copies the segments side by side into (mono, index) arrays in
     index order, torch.sort orders the int32 monos (stable, so ties stay in index order) and
     `unpack` gathers the indices.
   Either way, if a row's candidate count misses [k, CAP] (ties, adversarial rows), one program
   runs an exact radix select on 8-bit digits instead and keeps exactly k (ties by index); the
   bucket order then treats them as one group.
"""
from __future__ import annotations

import triton
import triton.language as tl

from .indexer_logits import SAMPLE_EVERY, batch_rows, visible_keys

# mono of a -inf score, below every finite score's: pads candidate arrays (index -1).
PAD_MONO = tl.constexpr(-2139095041)
# the threshold kernel's int32 record per row: keys seen, t0, and the bucket map's base score
# and scale (float32 bits)
THR_N = tl.constexpr(0)
THR_T0 = tl.constexpr(1)
THR_BASE = tl.constexpr(2)
THR_SCALE = tl.constexpr(3)
INT32_MIN = tl.constexpr(-2147483648)
INT32_MAX = tl.constexpr(2147483647)
INT64_MIN = tl.constexpr(-9223372036854775808)
INF_MONO = tl.constexpr(2139095040)  # mono of +inf: NaNs with the sign bit clear lie above


@triton.jit
def _dependent_start(PDL: tl.constexpr):
    """PDL: this kernel was launched as a programmatic dependent of the previous one (its launch
    overlaps that kernel's tail): wait until the previous kernel's writes are visible before
    reading anything, then let the next kernel launch early in turn."""
    if PDL:
        tl.extra.cuda.gdc_wait()
        tl.extra.cuda.gdc_launch_dependents()


@triton.jit
def _mono(x):
    bits = x.to(tl.int32, bitcast=True)
    return tl.where(bits < 0, bits ^ 2147483647, bits)


@triton.jit
def _pack(mono, idx):
    # low word 2^32-1 - idx, i.e. ~idx as an unsigned 32-bit word (no 64-bit arithmetic)
    return (mono.to(tl.int64) << 32) | (idx ^ -1).to(tl.uint32, bitcast=True).to(tl.int64)


@triton.jit
def _index_of(key):
    """The key index packed into the low word by _pack."""
    return (4294967295 - (key & 4294967295)).to(tl.int32)


@triton.jit
def _mono_of(key):
    """The mono packed into the high word by _pack."""
    return (key >> 32).to(tl.int32)


@triton.jit
def _score_of(mono):
    return tl.where(mono < 0, mono ^ 2147483647, mono).to(tl.float32, bitcast=True)


@triton.jit
def _unsigned(mono):
    """The mono as uint32 in the same order (sign bit flipped): what bisections compare."""
    return (mono ^ INT32_MIN).to(tl.uint32, bitcast=True)


@triton.jit
def _signed(u):
    """The mono of an unsigned order key (_unsigned's inverse)."""
    return (u ^ tl.full([], 2147483648, tl.uint32)).to(tl.int32, bitcast=True)


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
def _compact_runs(x, i, hi, written, dst_ptr, CAP, t_mono, TAIL: tl.constexpr):
    """One chunk of _compact_above: scores x at indices i [RUNS, V]; TAIL: some are past hi."""
    mono = _mono(x)
    keep = mono >= t_mono
    if TAIL:
        keep = keep & (i < hi)
    keep = keep.to(tl.int32)
    run = tl.sum(keep, 1)
    pos = written + (tl.cumsum(run, 0) - run)[:, None] + tl.cumsum(keep, 1) - keep
    tl.store(dst_ptr + pos, _pack(mono, i), mask=(keep > 0) & (pos < CAP))
    return written + tl.sum(run, 0)


@triton.jit
def _first_chunk(row_ptr, lo, hi, BLOCK_N: tl.constexpr, V: tl.constexpr):
    """The chunk of row[lo:hi] that _compact_above scans first, as it loads it."""
    offs = tl.arange(0, BLOCK_N // V)[:, None] * V + tl.arange(0, V)[None, :]
    hi_v = tl.multiple_of(tl.cdiv(hi, V) * V, V)
    return tl.load(row_ptr + lo + offs, mask=lo + offs < hi_v, other=0.0)


@triton.jit
def _compact_above(row_ptr, lo, hi, dst_ptr, CAP, t_mono, BLOCK_N: tl.constexpr,
                   V: tl.constexpr, first, first_lo):
    """Write the packed keys of row[lo:hi] with mono >= t_mono to dst in index order (at most
    CAP of them) and return how many there were; `lo` a multiple of
    BLOCK_N and the row readable up to hi rounded up to V (the workspace's width is a multiple
    of 16). Each chunk is [BLOCK_N / V, V]: V consecutive scores in one thread (one 16-byte
    load), so the positions are mostly per-thread sums and the block scan runs over the runs'
    counts only; whole chunks need no bounds (a flat chunk's scan and per-score bounds compiled
    to ~60 instructions per score, this to ~16). `first`: the chunk at `first_lo` as
    _first_chunk loaded it, before lo and hi were known; used if lo is first_lo (scores past
    hi in it are masked like any partial chunk's).
    """
    RUNS: tl.constexpr = BLOCK_N // V
    offs = tl.arange(0, RUNS)[:, None] * V + tl.arange(0, V)[None, :]
    hi_v = tl.multiple_of(tl.cdiv(hi, V) * V, V)  # loads in whole runs
    whole = lo + tl.maximum(hi - lo, 0) // BLOCK_N * BLOCK_N  # end of the whole chunks
    written = 0
    if lo == first_lo:
        nxt = first
    else:
        nxt = _first_chunk(row_ptr, lo, hi, BLOCK_N, V)
    for i0 in range(lo, whole, BLOCK_N):
        i = i0 + offs
        x = nxt
        nxt = tl.load(row_ptr + i + BLOCK_N, mask=i + BLOCK_N < hi_v, other=0.0)
        written = _compact_runs(x, i, hi, written, dst_ptr, CAP, t_mono, False)
    if whole < hi:  # nxt holds the partial last chunk
        written = _compact_runs(nxt, whole + offs, hi, written, dst_ptr, CAP, t_mono, True)
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


@triton.jit
def _indexer_segments_kernel(
        logits_ptr, stride_l, thr_ptr,
        seg_ptr, cnt_ptr,  # int64 [R, G, 2 * K_PAD] packed candidates; int32 [R, G] counts
        bcnt_ptr,  # int32 [R, 2, NB]: bucket counts (NB > 0)
        CAP_KEYS,  # the logits row width (keys the widest row may hold)
        K_PAD: tl.constexpr, NB: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_C: tl.constexpr,
        PDL: tl.constexpr):
    """Segment g of row r: its keys with mono > t0 (every key where t0 is INT32_MIN: rows
    of at most K keys), in index order (at most CAP), and their count (the keys at t0 are
    ties at the threshold: where fewer than K lie above it, place and merge take the first
    keys at t0 by index); with buckets, each candidate also adds one to its bucket's count
    (an integer sum: the order of the atomic adds changes nothing)."""
    _dependent_start(PDL)
    r = tl.program_id(0)
    g = tl.program_id(1)
    row = logits_ptr + r.to(tl.int64) * stride_l
    # the first chunk as if the row held all CAP_KEYS keys, loaded while the row's own count
    # is on its way (one round trip fewer wherever that gives the same segment start: rows
    # within a segment count's worth of scan steps of the widest)
    lo_w, hi_w = _segment_bounds(CAP_KEYS, g, tl.num_programs(1), BLOCK_N)
    first = _first_chunk(row, lo_w, hi_w, BLOCK_N, 4)
    n = tl.load(thr_ptr + 4 * r + THR_N)
    t0 = tl.load(thr_ptr + 4 * r + THR_T0)
    lo, hi = _segment_bounds(n, g, tl.num_programs(1), BLOCK_N)
    slot = (r * tl.num_programs(1) + g).to(tl.int64)
    dst = seg_ptr + slot * (2 * K_PAD)
    above = tl.where(t0 == INT32_MIN, t0, t0 + 1)  # t0 < INT32_MAX (threshold kernel)
    cnt = _compact_above(row, lo, hi, dst, 2 * K_PAD, above, BLOCK_N, 4, first, lo_w)
    tl.store(cnt_ptr + slot, cnt)
    if NB > 0:  # one atomic per candidate, over the compacted slot (dense lanes, L1/L2-hot);
        # same-word adds serialise, but the keys at t0 are not candidates, so a tie group adds
        # to one word at most ~CAP times a row (when they were, 64K equal keys took 265 µs)
        base, scale = _bucket_map(thr_ptr, r)
        row_cnt = bcnt_ptr + r.to(tl.int64) * (2 * NB)
        stored = tl.minimum(cnt, 2 * K_PAD)
        tl.debug_barrier()  # the slot was written by this program's other threads: make it visible
        for i0 in range(0, stored, BLOCK_C):
            i = i0 + tl.arange(0, BLOCK_C)
            m = i < stored
            b = _bucket(_mono_of(tl.load(dst + i, mask=m, other=0)), base, scale, NB)
            tl.atomic_add(row_cnt + b, 1, mask=m, sem="relaxed")


@triton.jit
def _segment_bounds(n, g, G, BLOCK_N: tl.constexpr):
    """Keys [lo, hi) of a row's segment g of G (the segments kernel's grid: (rows, G))."""
    seg = tl.cdiv(tl.cdiv(n, G), BLOCK_N) * BLOCK_N
    # lo is a multiple of BLOCK_N (not clamped at n: past the row the loop is empty), so the
    # compiler sees aligned contiguous chunks: 16-byte loads, several consecutive scores per
    # thread, and a scan that is mostly per-thread adds (unaligned, every score was its own
    # 4-byte load and the scan ran once per 128 of them)
    lo = tl.multiple_of(g * seg, BLOCK_N)
    return lo, tl.minimum(lo + seg, n)


@triton.jit
def _fill_ties(row_ptr, n, g, G, t0, room, at, idx_dst, val_dst, VALUES: tl.constexpr,
               AS_MONO: tl.constexpr, BLOCK_N: tl.constexpr):
    """The keys of segment g whose mono equals t0, in index order: the first `room` of them to
    positions at, at + 1, ... of idx_dst (their indices) and, with VALUES, of val_dst (t0
    itself with AS_MONO, else the score). Runs only in rows with fewer than K keys above t0."""
    lo, hi = _segment_bounds(n, g, G, BLOCK_N)
    seen = 0
    for i0 in range(lo, hi, BLOCK_N):
        if seen < room:
            i = i0 + tl.arange(0, BLOCK_N)
            x = tl.load(row_ptr + i, mask=i < hi, other=0.0)
            tie = (i < hi) & (_mono(x) == t0)
            t = tie.to(tl.int32)
            rank = seen + tl.cumsum(t, 0) - t
            put = tie & (rank < room)
            tl.store(idx_dst + at + rank, i, mask=put)
            if VALUES:
                if AS_MONO:
                    tl.store(val_dst + at + rank, tl.zeros_like(rank) + t0, mask=put)
                else:
                    tl.store(val_dst + at + rank, x, mask=put)
            seen += tl.sum(t, 0)


@triton.jit
def _take_ties(row_ptr, n, g, G, t0, above, K, idx_dst, val_dst, VALUES: tl.constexpr,
               AS_MONO: tl.constexpr, BLOCK_N: tl.constexpr):
    """A row with `above` < K keys above t0: whether its keys at t0 fill the K - above
    positions left; if so, segment g's share of the first of them by index is written after
    the candidates (_fill_ties). Place and merge both end a tied row so."""
    room = K - above
    before, after = _row_ties(row_ptr, n, g, G, t0, room, BLOCK_N)
    fill = before + after >= room
    if fill:
        _fill_ties(row_ptr, n, g, G, t0, room - before, above + before, idx_dst, val_dst, VALUES,
                   AS_MONO, BLOCK_N)
    return fill


@triton.jit
def _row_ties(row_ptr, n, g, G, t0, room, BLOCK_N: tl.constexpr):
    """A row's keys at t0 in the segments before g, and in g and those after it, each count
    stopping once the two reach `room` (the answer wanted is only whether they fill it, and
    how many lie before g where they do not). Every program of a tied row runs this, so it is
    on the row's critical path: a row of one repeated score stops after a chunk group instead
    of scanning the whole row, and a program whose earlier segments already fill the room
    scans nothing of its own."""
    lo, _ = _segment_bounds(n, g, G, BLOCK_N)
    mid = tl.minimum(lo, n)  # lo is a multiple of BLOCK_N, or past the row
    before = _count_at(row_ptr, 0, mid, t0, room, BLOCK_N)
    return before, _count_at(row_ptr, mid, n, t0, room - before, BLOCK_N)


@triton.jit
def _count_at(row_ptr, lo, hi, t0, stop, BLOCK_N: tl.constexpr):
    """Keys [lo, hi) of a row whose mono equals t0, counted per lane and summed every eighth
    chunk (a block reduction per chunk doubled the time of a 64K row's count) until `stop` are
    seen: the exact count where it is below `stop`, else some count at or above it."""
    count = tl.zeros([BLOCK_N], tl.int32)
    seen = 0
    i0 = lo
    while (i0 < hi) & (seen < stop):
        i = i0 + tl.arange(0, BLOCK_N)
        mono = _mono(tl.load(row_ptr + i, mask=i < hi, other=0.0))
        count += ((i < hi) & (mono == t0)).to(tl.int32)
        i0 += BLOCK_N
        if (i0 - lo) % (8 * BLOCK_N) == 0:
            seen = tl.sum(count, 0)
    return tl.sum(count, 0)


@triton.jit
def _row_candidates(thr_ptr, cnt_ptr, r, G, K, CAP, G_PAD: tl.constexpr):
    """Row r's keys n, its G segments' candidate counts, their total, and whether the sampled
    threshold worked for the sort order: the total is in [K, CAP] (or the row sees at most K
    keys, all taken). The bucket order takes more than CAP candidates where its placed ones
    fit (place)."""
    gs = tl.arange(0, G_PAD)
    counts = tl.load(cnt_ptr + r.to(tl.int64) * G + gs, mask=gs < G, other=0)
    total = tl.sum(counts, 0)
    n = tl.load(thr_ptr + 4 * r + THR_N)
    return n, counts, total, (n <= K) | ((total >= K) & (total <= CAP))


@triton.jit
def _segment_slot(seg_ptr, r64, g, G, CAP):
    """Segment g's slot of packed candidates (the segment kernel's output; grid (rows, G))."""
    return seg_ptr + (r64 * G + g) * CAP


@triton.jit
def _segment_count(counts, g, G_PAD: tl.constexpr):
    """Segment g's candidate count, from the row's counts [G_PAD]."""
    return tl.sum(tl.where(tl.arange(0, G_PAD) == g, counts, 0), 0)


@triton.jit
def _indexer_merge_kernel(
        logits_ptr, stride_l, thr_ptr, seg_ptr, cnt_ptr,
        mono_ptr, idx_ptr, tot_ptr,  # int32 [R, 2 * K_PAD] x2, int32 [R]: each row's candidates
        K, K_PAD: tl.constexpr, BLOCK_N: tl.constexpr, G_PAD: tl.constexpr, PDL: tl.constexpr):
    """Program (r, g) copies segment g to its offset (the counts before it); program (r, 0) pads
    the tail and writes the count, or, when the sampled threshold missed [K, CAP], runs the
    exact select over the whole row instead (the others then copy nothing). Where fewer than K
    keys lie above t0 but enough lie at it, the first keys at t0 by index follow the
    candidates (the stable sort keeps them after every higher score, in index order), each
    program appending its segment's share."""
    _dependent_start(PDL)
    r = tl.program_id(0)
    g = tl.program_id(1)
    r64 = r.to(tl.int64)
    CAP: tl.constexpr = 2 * K_PAD
    G = tl.num_programs(1)
    n, counts, total, ok = _row_candidates(thr_ptr, cnt_ptr, r, G, K, CAP, G_PAD)
    dst_m = mono_ptr + r64 * CAP
    dst_i = idx_ptr + r64 * CAP
    fill = False
    if (n > K) & (total < K) & (tl.max(counts, 0) <= CAP):  # enough keys at t0?
        fill = _take_ties(logits_ptr + r64 * stride_l, n, g, G,
                          tl.load(thr_ptr + 4 * r + THR_T0), total, K, dst_i, dst_m, True, True,
                          BLOCK_N)
    if ok | fill:
        src = _segment_slot(seg_ptr, r64, g, G, CAP)
        c = _segment_count(counts, g, G_PAD)
        offset = tl.sum(tl.where(tl.arange(0, G_PAD) < g, counts, 0), 0)
        for i0 in range(0, c, BLOCK_N):
            i = i0 + tl.arange(0, BLOCK_N)
            m = i < c
            packed = tl.load(src + i, mask=m, other=0)
            tl.store(dst_m + offset + i, _mono_of(packed), mask=m)
            tl.store(dst_i + offset + i, _index_of(packed), mask=m)
    elif g == 0:
        total = _exact_select(logits_ptr + r64 * stride_l, n, K, dst_m, dst_i, CAP, BLOCK_N)
    if fill:
        total = K
    if g == 0:
        offs = tl.arange(0, CAP)
        pad = offs >= total
        tl.store(dst_m + offs, tl.full([CAP], PAD_MONO, tl.int32), mask=pad)
        tl.store(dst_i + offs, tl.full([CAP], -1, tl.int32), mask=pad)
        tl.store(tot_ptr + r, total)


@triton.jit
def _indexer_place_kernel(
        logits_ptr, stride_l, thr_ptr, seg_ptr, cnt_ptr,
        bcnt_ptr,  # int32 [R, 2, NB]: bucket counts (complete), cursors (zero)
        dense_ptr,  # int64 [R, 2 * K_PAD]: out: the candidates, grouped by bucket, top first
        grp_ptr,  # int32 [R, 2 * K_PAD]: out: each slot's group, first slot | size << 16
        tot_ptr,  # int32 [R]: out: candidates placed (those of groups that start before K)
        fill_ptr,  # int32 [R]: out: output positions after them that hold ties at t0
        out_idx_ptr, out_val_ptr,  # int32 / fp32 [R, K]: the ties at t0 written here
        K, RETURN_VALUE: tl.constexpr, K_PAD: tl.constexpr, NB: tl.constexpr,
        BLOCK_N: tl.constexpr, BLOCK_C: tl.constexpr, G_PAD: tl.constexpr, PDL: tl.constexpr):
    """Program (r, g, p) moves candidates of segment g into the row's bucket groups (grid
    (rows, G, P); chunk p of BLOCK_C, then p + P, ...: a short row has G = 2 segments, and one
    program per segment placed its ~1450 candidates in six serial chunks). Bucket b's
    group starts after every candidate of a higher bucket, and an atomic cursor gives each
    candidate a slot inside its group (the slot inside a group decides nothing: the rank kernel
    orders a group by comparing keys). Where fewer than K keys lie above t0 but enough lie at
    it (ties at the threshold), the candidates are placed and the output positions after them
    are filled with the first keys at t0 by index, each program writing its segment's share.
    If fewer than K keys reached t0, or the groups up to position K hold more than CAP (a
    threshold far too low), program (r, 0, 0) runs the exact select instead and its K keys form a
    single group. Only the programs p = 0 handle ties (a tied row's places all of its segment),
    and (r, 0, 0) the fallback and the row's totals."""
    _dependent_start(PDL)
    r = tl.program_id(0)
    g = tl.program_id(1)
    G = tl.num_programs(1)
    p = tl.program_id(2)
    P = tl.num_programs(2)
    r64 = r.to(tl.int64)
    CAP: tl.constexpr = 2 * K_PAD
    tl.static_assert(CAP < 65536, "group words hold a slot and a size in 16 bits each")
    dst = dense_ptr + r64 * CAP
    # read before the counts arrive, not after (one dependent round trip fewer): the segment's
    # first BLOCK_C slots of this program (in bounds: P·BLOCK_C <= CAP), the bucket map and
    # the bucket counts
    src = _segment_slot(seg_ptr, r64, g, G, CAP)
    packed = tl.load(src + p * BLOCK_C + tl.arange(0, BLOCK_C))
    base, scale = _bucket_map(thr_ptr, r)
    bcnt = tl.load(bcnt_ptr + r64 * (2 * NB) + tl.arange(0, NB))
    n, counts, total, _ = _row_candidates(thr_ptr, cnt_ptr, r, G, K, CAP, G_PAD)
    start = tl.cumsum(bcnt, 0, reverse=True) - bcnt
    # a group that starts at K or later holds no output position: its candidates are not
    # placed, and the rank kernel stops at the first such start (every start is a group
    # boundary: an empty bucket's is the next lower group's). So more than CAP candidates are
    # fine as long as the placed ones fit (and no segment overflowed its slot): a threshold
    # a little low costs nothing here, where the sort order needs the exact fallback
    above = total
    total = tl.minimum(total, tl.min(tl.where(start >= K, start, total), 0))
    fits = tl.max(counts, 0) <= CAP
    ok = (n <= K) | ((total >= K) & (total <= CAP) & fits)
    fill = False
    if (n > K) & (above < K) & fits & (p == 0):  # (then total == above): enough keys at t0?
        fill = _take_ties(logits_ptr + r64 * stride_l, n, g, G,
                          tl.load(thr_ptr + 4 * r + THR_T0), above, K, out_idx_ptr + r64 * K,
                          out_val_ptr + r64 * K, RETURN_VALUE, False, BLOCK_N)
    if ok | fill:
        c = _segment_count(counts, g, G_PAD)
        group = start | (bcnt << 16)  # placed groups: start < K, start + size <= CAP < 2^16
        step = tl.where(ok, P, 1) * BLOCK_C  # (fill: p == 0, which then places every chunk)
        for i0 in range(p * BLOCK_C, c, step):
            i = i0 + tl.arange(0, BLOCK_C)
            if i0 > p * BLOCK_C:
                packed = tl.load(src + i, mask=i < c, other=0)
            b = _bucket(_mono_of(packed), base, scale, NB)
            first = tl.gather(start, b, 0)
            m = (i < c) & (first < K)
            at = tl.atomic_add(bcnt_ptr + r64 * (2 * NB) + NB + b, 1, mask=m, sem="relaxed")
            slot = first + at
            tl.store(dst + slot, packed, mask=m)
            tl.store(grp_ptr + r64 * CAP + slot, tl.gather(group, b, 0), mask=m)
    elif (g == 0) & (p == 0):
        total = _exact_select(logits_ptr + r64 * stride_l, n, K, dst, dst, CAP, BLOCK_N, True)
        for i0 in range(0, total, BLOCK_C):
            i = i0 + tl.arange(0, BLOCK_C)
            tl.store(grp_ptr + r64 * CAP + i, tl.zeros([BLOCK_C], tl.int32) + (total << 16),
                     mask=i < total)
    if (g == 0) & (p == 0):
        tl.store(tot_ptr + r, total)
        tl.store(fill_ptr + r, tl.where(fill, K - total, 0))


@triton.jit
def _rank_block(row, out_idx, out_val, key_i, grp_i, i0, total, filled, K,
                RETURN_VALUE: tl.constexpr, BLOCK_I: tl.constexpr, BLOCK_J: tl.constexpr):
    """Slots i0 .. i0 + BLOCK_I of a row (their keys and group words given): each candidate
    to its position, and positions from min(total + filled, K) on padded (`filled`: the ties
    at t0 that place wrote after the candidates). Each slot reads its own group only, BLOCK_J
    members a step: groups are short (a few candidates each), so the steps are as many as the
    block's largest group needs. (Comparing each block with the slot range of all its groups,
    [32, 32] pairs a step, spent most of its pairs on other groups: at B=64 the rank kernel
    issued ~40 warp instructions per slot and was bound by their issue.)"""
    i = i0 + tl.arange(0, BLOCK_I)
    mine = i < total
    first = grp_i & 65535
    size = tl.where(mine, grp_i >> 16, 0)
    if i0 < total:
        beats = tl.zeros([BLOCK_I], dtype=tl.int32)
        group = row + first
        for t0 in range(0, tl.max(size, 0), BLOCK_J):
            for u in tl.static_range(BLOCK_J):
                # a masked member reads INT64_MIN, which beats no key (none is INT64_MIN: its
                # index would be 2^32 - 1)
                key_j = tl.load(group + (t0 + u), mask=t0 + u < size, other=INT64_MIN)
                beats += (key_j > key_i).to(tl.int32)
        pos = first + beats
        put = mine & (pos < K)
        tl.store(out_idx + pos, _index_of(key_i), mask=put)
        if RETURN_VALUE:
            tl.store(out_val + pos, _score_of(_mono_of(key_i)), mask=put)
    pad = (i >= total + filled) & (i < K)
    tl.store(out_idx + i, tl.full([BLOCK_I], -1, tl.int32), mask=pad)
    if RETURN_VALUE:
        tl.store(out_val + i, tl.full([BLOCK_I], float("-inf"), tl.float32), mask=pad)


@triton.jit
def _indexer_rank_kernel(
        dense_ptr, grp_ptr, tot_ptr,  # int64 / int32 [R, CAP], int32 [R]: place's grouped
        # candidates, their group words, and how many
        fill_ptr,  # int32 [R]: ties at t0 place wrote after them
        out_idx_ptr, out_val_ptr,  # int32 / fp32 [R, K]
        K, RETURN_VALUE: tl.constexpr, CAP: tl.constexpr, BLOCK_I: tl.constexpr,
        BLOCK_J: tl.constexpr, PDL: tl.constexpr):
    """Candidate i goes to position first(i) + #{candidates of its group with a larger key}
    (keys are unique: (mono, then smaller index) packed; first(i) is the count of candidates in
    higher groups). Slots are grouped, so each candidate reads its own group's slots only
    (the group word gives their range). Positions from min(total, K) on get -1 / -inf. The grid
    covers a little more than K slots (placed groups rarely reach far past K:
    configs.rank_programs); program p takes blocks p, p + grid, ... up to max(total, K), so the
    slots past the grid's first pass are still ranked."""
    _dependent_start(PDL)
    r64 = tl.program_id(0).to(tl.int64)
    blk = tl.program_id(1)
    total = tl.load(tot_ptr + r64)
    filled = tl.load(fill_ptr + r64)
    row = dense_ptr + r64 * CAP
    grp_row = grp_ptr + r64 * CAP
    out_idx = out_idx_ptr + r64 * K
    out_val = out_val_ptr + r64 * K
    # the first block is loaded before `total` is known (in bounds: the grid covers at most
    # CAP slots); slots past it are never used
    i = blk * BLOCK_I + tl.arange(0, BLOCK_I)
    _rank_block(row, out_idx, out_val, tl.load(row + i), tl.load(grp_row + i),
                blk * BLOCK_I, total, filled, K, RETURN_VALUE, BLOCK_I, BLOCK_J)
    step = tl.num_programs(1)
    for b in range(blk + step, tl.cdiv(tl.maximum(total, K), BLOCK_I), step):
        i = b * BLOCK_I + tl.arange(0, BLOCK_I)
        _rank_block(row, out_idx, out_val, tl.load(row + i), tl.load(grp_row + i),
                    b * BLOCK_I, total, filled, K, RETURN_VALUE, BLOCK_I, BLOCK_J)


@triton.jit
def _indexer_unpack_kernel(
        sorted_ptr, perm_ptr, stride_s,  # int32 monos / int64 positions [R, CAP], sorted rows
        idx_ptr, tot_ptr,  # each row's candidate indices [R, CAP] and count [R]
        out_idx_ptr, out_val_ptr,  # int32 / fp32 [R, K]
        K, RETURN_VALUE: tl.constexpr, BLOCK: tl.constexpr, PDL: tl.constexpr):
    _dependent_start(PDL)
    r64 = tl.program_id(0).to(tl.int64)
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    keep = offs < tl.minimum(tl.load(tot_ptr + r64), K)
    perm = tl.load(perm_ptr + r64 * stride_s + offs, mask=keep, other=0)
    idx = tl.load(idx_ptr + r64 * stride_s + perm, mask=keep, other=-1)
    m = offs < K
    tl.store(out_idx_ptr + r64 * K + offs, tl.where(keep, idx, -1), mask=m)
    if RETURN_VALUE:
        val = _score_of(tl.load(sorted_ptr + r64 * stride_s + offs, mask=keep, other=0))
        tl.store(out_val_ptr + r64 * K + offs, tl.where(keep, val, float("-inf")), mask=m)


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
    pad = (i >= na + nb) & (i < K)
    tl.store(out_i + i, tl.full([BLOCK], -1, tl.int32), mask=pad)
    if RETURN_VALUE:
        tl.store(out_v + i, tl.full([BLOCK], float("-inf"), tl.float32), mask=pad)
