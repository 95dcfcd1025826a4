"""Phase 2, step 3 for up to TopkConfig.bucket_max_rows rows: bucket groups, then ranks.

`place` gives each bucket a group of slots after all higher buckets and moves each candidate into
its group (an atomic cursor picks the slot inside the group, which decides nothing); `rank` puts
each candidate at its group's first slot plus the number of larger keys in its group.
Latency-bound launches spread over the GPU: at 8–256 rows quicker than a sort's one block per row.
"""
from __future__ import annotations

import triton
import triton.language as tl

from .exact import _exact_select
from .keys import (INT64_MIN, THR_T0, _dependent_start, _index_of, _mono_of, _score_of,
                   _store_padding)
from .segments import _row_candidates, _segment_count, _segment_slot
from .threshold import _bucket, _bucket_map
from .ties import _take_ties


@triton.jit
def _bucket_groups(thr_ptr, cnt_ptr, bcnt_ptr, r, r64, G, K, CAP, NB: tl.constexpr,
                   G_PAD: tl.constexpr):
    """Row r's bucket map (base, scale), bucket counts and each group's first position
    (start: after every candidate of a higher bucket), its keys n, segment counts, candidates
    in all (above) and placed (total), whether no segment overflowed its slot (fits), and
    whether the groups serve: the placed candidates reach K and fit CAP, or the row sees at
    most K keys (ok)."""
    base, scale = _bucket_map(thr_ptr, r)
    bcnt = tl.load(bcnt_ptr + r64 * (2 * NB) + tl.arange(0, NB))
    n, counts, above, _ = _row_candidates(thr_ptr, cnt_ptr, r, G, K, CAP, G_PAD)
    start = tl.cumsum(bcnt, 0, reverse=True) - bcnt
    # a group that starts at K or later holds no output position: its candidates are not
    # placed, and ranking stops at the first such start (every start is a group boundary: an
    # empty bucket's is the next lower group's). So more than CAP candidates are fine as long
    # as the placed ones fit (and no segment overflowed its slot): a threshold a little low
    # costs nothing here, where the sort order needs the exact fallback
    total = tl.minimum(above, tl.min(tl.where(start >= K, start, above), 0))
    fits = tl.max(counts, 0) <= CAP
    ok = (n <= K) | ((total >= K) & (total <= CAP) & fits)
    return base, scale, bcnt, start, n, counts, above, total, fits, ok


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
    base, scale, bcnt, start, n, counts, above, total, fits, ok = _bucket_groups(
        thr_ptr, cnt_ptr, bcnt_ptr, r, r64, G, K, CAP, NB, G_PAD)
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
def _rank_slots(row, out_idx, out_val, key_i, first, size, K, RETURN_VALUE: tl.constexpr,
                BLOCK_J: tl.constexpr):
    """Keys key_i (slots of `row`; size 0 for lanes without one) to their output positions:
    their group's first position plus the members of the group (slots first .. first + size)
    with a larger key, read BLOCK_J a step. Groups are short (a few candidates each), so the
    steps are as many as the largest group among the lanes needs. (Comparing a block with the
    slot range of all its groups, [32, 32] pairs a step, spent most of its pairs on other
    groups: at B=64 that rank kernel issued ~40 warp instructions per slot.)"""
    beats = tl.zeros(key_i.shape, dtype=tl.int32)
    group = row + first
    for t in range(0, tl.max(size, 0), BLOCK_J):
        for u in tl.static_range(BLOCK_J):
            # a masked member reads INT64_MIN, which beats no key (none is INT64_MIN: its
            # index would be 2^32 - 1)
            key_j = tl.load(group + (t + u), mask=t + u < size, other=INT64_MIN)
            beats += (key_j > key_i).to(tl.int32)
    pos = first + beats
    put = (size > 0) & (pos < K)
    tl.store(out_idx + pos, _index_of(key_i), mask=put)
    if RETURN_VALUE:
        tl.store(out_val + pos, _score_of(_mono_of(key_i)), mask=put)


@triton.jit
def _rank_block(row, out_idx, out_val, key_i, grp_i, i0, total, filled, K,
                RETURN_VALUE: tl.constexpr, BLOCK_I: tl.constexpr, BLOCK_J: tl.constexpr):
    """Slots i0 .. i0 + BLOCK_I of a row (their keys and group words given): each candidate
    to its position (_rank_slots), and positions from min(total + filled, K) on padded
    (`filled`: the ties at t0 that place wrote after the candidates)."""
    i = i0 + tl.arange(0, BLOCK_I)
    if i0 < total:
        size = tl.where(i < total, grp_i >> 16, 0)
        _rank_slots(row, out_idx, out_val, key_i, grp_i & 65535, size, K, RETURN_VALUE, BLOCK_J)
    _store_padding(out_idx, out_val, i, (i >= total + filled) & (i < K), RETURN_VALUE)


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
