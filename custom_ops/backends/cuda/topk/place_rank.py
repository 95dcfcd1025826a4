"""Phase 2, step 3 for calls of TopkConfig.place_rank_rows to bucket_max_rows rows: the bucket
order's place and rank in one launch.

Program (r, j) of a row's J owns the buckets whose group of output positions starts in its
share of the first K positions: it reads all of the row's candidates, moves those of its buckets
into their groups' slots, and, once its block has written them, ranks them within their groups
(`_rank_slots`, as `rank` does). Owning whole groups is what lets one program do both; `place`,
whose programs own segments, needs the `rank` launch after it. Every program reads every
candidate of its row, so this pays where rows are many and a launch more is the larger cost
(B=64, 64K, next_n=1); at a few rows the two launches' many short programs win (NOTES, session
30).
"""
from __future__ import annotations

import triton
import triton.language as tl

from .buckets import _bucket_groups, _rank_slots
from .exact import _exact_select
from .keys import THR_T0, _dependent_start, _mono_of, _store_padding
from .threshold import _bucket
from .ties import _take_ties


@triton.jit
def _indexer_place_rank_kernel(
        logits_ptr, stride_l, thr_ptr,
        seg_ptr, cnt_ptr, G,  # int64 [R, G, CAP] / int32 [R, G]: the segments' candidates
        bcnt_ptr,  # int32 [R, 2, NB]: bucket counts (complete), cursors (zero; a program
        # sets its groups' to their first slots)
        dense_ptr,  # int64 [R, CAP]: the placed candidates, grouped by bucket, top first
        out_idx_ptr, out_val_ptr,  # int32 / fp32 [R, K]
        K, RETURN_VALUE: tl.constexpr, K_PAD: tl.constexpr, NB: tl.constexpr,
        BLOCK_N: tl.constexpr, TILE: tl.constexpr, G_PAD: tl.constexpr,
        BLOCK_I: tl.constexpr, BLOCK_J: tl.constexpr, PDL: tl.constexpr):
    """Program (r, j) of J (grid (rows, J), J <= G): positions [j·S, (j + 1)·S) of row r's K,
    S = ceil(K / J). Bucket b's group starts after every candidate of a higher bucket; the
    program owns the groups that start in its positions, places their candidates (read from
    all G segments, TILE at a time as [G_PAD, TILE / G_PAD]) and ranks them; groups that
    start at K or later hold no output position and are left out. Where fewer than K keys lie
    above t0 but enough lie at it (ties at the threshold), the candidates are placed and ranked
    and the positions after them filled with the first keys at t0 by index, each program
    writing its 1/J of the row's share. Where fewer than K keys reached t0, or the groups up to
    position K hold more than CAP, each program selects the row's K keys exactly into its own
    segment slot (the candidates are then not read) and ranks its 1/J of them. Positions past
    the row's keys get -1 / -inf, each program padding its own."""
    _dependent_start(PDL)
    r = tl.program_id(0)
    j = tl.program_id(1)
    J = tl.num_programs(1)
    r64 = r.to(tl.int64)
    CAP: tl.constexpr = 2 * K_PAD
    W: tl.constexpr = TILE // G_PAD  # candidates a step from each segment
    tl.static_assert(W >= 1, "TILE holds at least one candidate of each segment")
    out_idx = out_idx_ptr + r64 * K
    out_val = out_val_ptr + r64 * K
    base, scale, bcnt, start, n, counts, above, total, fits, ok = _bucket_groups(
        thr_ptr, cnt_ptr, bcnt_ptr, r, r64, G, K, CAP, NB, G_PAD)
    fill = False
    if (n > K) & (above < K) & fits:  # (then total == above): enough keys at t0?
        fill = _take_ties(logits_ptr + r64 * stride_l, n, j, J,
                          tl.load(thr_ptr + 4 * r + THR_T0), above, K, out_idx, out_val,
                          RETURN_VALUE, False, BLOCK_N)
    S = tl.cdiv(K, J)
    lo = j * S
    hi = tl.minimum(lo + S, K)
    row = dense_ptr + r64 * CAP
    row_cnt = bcnt_ptr + r64 * (2 * NB)  # the row's bucket counts, then its cursors
    cursor = row_cnt + NB
    if ok | fill:
        # the groups that start in [lo, hi) are those of a bucket range (starts fall as b rises)
        bs = tl.arange(0, NB)
        mine = (start >= lo) & (start < hi) & (bcnt > 0)
        b_lo = tl.min(tl.where(mine, bs, NB), 0)
        b_hi = tl.max(tl.where(mine, bs, -1), 0)
        slot_lo = tl.min(tl.where(mine, start, CAP), 0)
        slot_hi = tl.max(tl.where(mine, start + bcnt, 0), 0)
        if b_lo <= b_hi:
            # each of its buckets' cursors starts at the group's first slot (only this program
            # moves them), so a candidate's atomic add returns its slot: no lookup of the
            # group's start per candidate (a gather from the block's 1024 starts per candidate
            # cost ~80 instructions each, and every program reads every candidate of the row)
            tl.store(cursor + bs, start, mask=mine)
            tl.debug_barrier()
            e = tl.arange(0, TILE)
            eg = e // W
            ew = e % W
            c_e = tl.gather(counts, eg, 0)  # (0 past G: counts are loaded masked)
            src = seg_ptr + (r64 * G + eg) * CAP + ew
            nxt = tl.load(src, mask=ew < c_e, other=0)
            for o in range(0, tl.max(counts, 0), W):
                packed = nxt
                m = o + ew < c_e
                # the next step's candidates load while this step's are placed
                nxt = tl.load(src + (o + W), mask=o + W + ew < c_e, other=0)
                b = _bucket(_mono_of(packed), base, scale, NB)
                m = m & (b >= b_lo) & (b <= b_hi)
                slot = tl.atomic_add(cursor + b, 1, mask=m, sem="relaxed")
                tl.store(row + slot, packed, mask=m)
            tl.debug_barrier()  # the slots were written by this program's other threads
            for i0 in range(slot_lo, slot_hi, BLOCK_I):
                i = i0 + tl.arange(0, BLOCK_I)
                inside = i < slot_hi
                key_i = tl.load(row + i, mask=inside, other=0)
                b = _bucket(_mono_of(key_i), base, scale, NB)
                # the cursor now ends the group (read from L2: atomics moved it)
                group_end = tl.load(cursor + b, mask=inside, other=0, cache_modifier=".cg")
                size = tl.load(row_cnt + b, mask=inside, other=0)
                _rank_slots(row, out_idx, out_val, key_i, group_end - size, size, K,
                            RETURN_VALUE, BLOCK_J)
        done = tl.where(fill, K, total)
    else:
        own = seg_ptr + (r64 * G + j) * CAP  # no program of this row reads candidates
        done = _exact_select(logits_ptr + r64 * stride_l, n, K, own, own, CAP, BLOCK_N, True)
        tl.debug_barrier()
        share = tl.cdiv(done, J)
        end = tl.minimum(j * share + share, done)
        for i0 in range(j * share, end, BLOCK_I):
            i = i0 + tl.arange(0, BLOCK_I)
            inside = i < end
            key_i = tl.load(own + i, mask=inside, other=0)
            _rank_slots(own, out_idx, out_val, key_i, tl.zeros([BLOCK_I], tl.int32),
                        tl.where(inside, done, 0), K, RETURN_VALUE, BLOCK_J)
    # positions past the row's keys (and its ties at t0): -1 / -inf
    for p0 in range(tl.maximum(lo, done), hi, BLOCK_I):
        p = p0 + tl.arange(0, BLOCK_I)
        _store_padding(out_idx, out_val, p, p < hi, RETURN_VALUE)
