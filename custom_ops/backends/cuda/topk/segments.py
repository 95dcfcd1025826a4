"""Phase 2, step 2: G segments per row, each compacting its keys above t0 (grid: rows × G).

G programs per row keep one long row (B=1) on many SMs; each writes its candidates as packed keys
in index order into its own slot, their count, and with buckets their bucket counts. The helpers
at the end read that layout for the two orders.
"""
from __future__ import annotations

import triton
import triton.language as tl

from .keys import INT32_MIN, THR_N, THR_T0, _dependent_start, _mono, _mono_of, _pack
from .threshold import _bucket, _bucket_map


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
