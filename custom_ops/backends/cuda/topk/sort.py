"""Phase 2, step 3 for many rows: merge the segments, sort with torch, unpack the indices.

`merge` copies each row's segments side by side into (mono, index) arrays in index order (or runs
the exact select), torch.sort orders the int32 monos (stable, so ties stay in index order) and
`unpack` gathers the top K indices and values.
"""
from __future__ import annotations

import triton
import triton.language as tl

from .exact import _exact_select
from .keys import PAD_MONO, THR_T0, _dependent_start, _index_of, _mono_of, _score_of
from .segments import _row_candidates, _segment_count, _segment_slot
from .ties import _take_ties


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
