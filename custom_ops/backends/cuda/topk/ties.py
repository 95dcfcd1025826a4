"""Rows with fewer than K keys above t0: the first keys at t0 by index fill the positions left.

Place and merge both end a tied row so, each segment program writing its share.
"""
from __future__ import annotations

import triton
import triton.language as tl

from .keys import _mono
from .segments import _segment_bounds


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
