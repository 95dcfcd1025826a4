"""Phase 2, step 3 for rows past TopkConfig.bucket_max_rows, up to bitonic_max_rows: one program
per row gathers its segments' candidates, orders them by a bitonic top-k in registers and writes
the row's output (the sort order's merge, torch.sort and unpack in one launch).

The candidates are the segments' packed int64 keys (keys.py: descending key order is SPEC §1.4's
order, ties by index included), so no stable sort is needed and the result equals the sort
order's bit for bit. Rows whose sampled threshold missed [K, CAP] take the same detours as in
merge, in this one program: the first keys at t0 by index after the candidates (ties), or the
exact select.
"""
from __future__ import annotations

import triton
import triton.language as tl

from .exact import _exact_select
from .keys import INT64_MIN, THR_T0, _dependent_start, _index_of, _mono_of, _pack, _score_of
from .segments import _row_candidates
from .ties import _take_ties


@triton.jit
def _gathered(seg_ptr, cnt_ptr, r64, total, G, CAP: tl.constexpr, G_PAD: tl.constexpr):
    """The row's candidates as [CAP] packed keys, slot s holding the s-th candidate of the
    segments side by side (segment g's count after the counts before it); INT64_MIN from
    `total` on. The counts are read again as scalars: a [CAP, G_PAD] comparison would hold
    G_PAD registers per slot."""
    s = tl.arange(0, CAP)
    g = tl.zeros([CAP], tl.int32)  # the segment slot s falls in
    first = tl.zeros([CAP], tl.int32)  # that segment's first slot
    end = 0
    for j in tl.static_range(G_PAD):
        end += tl.load(cnt_ptr + r64 * G + j, mask=j < G, other=0)
        past = s >= end
        g += past.to(tl.int32)
        first = tl.where(past, end, first)
    src = seg_ptr + (r64 * G + g) * CAP + (s - first)
    return tl.load(src, mask=s < total, other=INT64_MIN)


@triton.jit
def _scratch_keys(mono_ptr, idx_ptr, lo, hi, CAP: tl.constexpr):
    """Slots [lo, hi) of a row's (mono, index) scratch as packed keys, INT64_MIN elsewhere."""
    s = tl.arange(0, CAP)
    m = (s >= lo) & (s < hi)
    mono = tl.load(mono_ptr + s, mask=m, other=0)
    idx = tl.load(idx_ptr + s, mask=m, other=0)
    return tl.where(m, _pack(mono, idx), INT64_MIN)


@triton.jit
def _indexer_bitonic_kernel(
        logits_ptr, stride_l, thr_ptr, seg_ptr, cnt_ptr,
        mono_ptr, idx_ptr,  # int32 [R, CAP] x2: scratch of the rows that take ties or the select
        out_idx_ptr, out_val_ptr,  # int32 / fp32 [R, K]
        G, K, RETURN_VALUE: tl.constexpr, K_PAD: tl.constexpr, BLOCK_N: tl.constexpr,
        G_PAD: tl.constexpr, PDL: tl.constexpr):
    """Row r (grid: rows): its candidates gathered from the G segments, the top K_PAD of them
    by tl.topk (a bitonic network over CAP = 2·K_PAD keys in registers, descending), the first
    min(total, K) written as indices (and scores), -1 (and -inf) after them."""
    _dependent_start(PDL)
    r = tl.program_id(0)
    r64 = r.to(tl.int64)
    CAP: tl.constexpr = 2 * K_PAD
    n, counts, total, ok = _row_candidates(thr_ptr, cnt_ptr, r, G, K, CAP, G_PAD)
    keys = _gathered(seg_ptr, cnt_ptr, r64, tl.where(ok, total, 0), G, CAP, G_PAD)
    row = logits_ptr + r64 * stride_l
    mono_row = mono_ptr + r64 * CAP
    idx_row = idx_ptr + r64 * CAP
    if not ok:
        fill = False
        if (n > K) & (total < K) & (tl.max(counts, 0) <= CAP):  # enough keys at t0?
            # the whole row's first keys at t0 by index into slots total .. K - 1 (one
            # program: merge spreads this over the row's segment programs)
            fill = _take_ties(row, n, 0, 1, tl.load(thr_ptr + 4 * r + THR_T0), total, K,
                              idx_row, mono_row, True, True, BLOCK_N)
        if fill:
            tl.debug_barrier()  # the scratch was written by this program's other threads
            keys = tl.where(tl.arange(0, CAP) < total,
                            _gathered(seg_ptr, cnt_ptr, r64, total, G, CAP, G_PAD),
                            _scratch_keys(mono_row, idx_row, total, K, CAP))
            total = K
        else:
            total = _exact_select(row, n, K, mono_row, idx_row, CAP, BLOCK_N)
            tl.debug_barrier()
            keys = _scratch_keys(mono_row, idx_row, 0, total, CAP)
    top = tl.topk(keys, K_PAD)
    p = tl.arange(0, K_PAD)
    keep = p < tl.minimum(total, K)
    out = p < K
    tl.store(out_idx_ptr + r64 * K + p, tl.where(keep, _index_of(top), -1), mask=out)
    if RETURN_VALUE:
        val = tl.where(keep, _score_of(_mono_of(top)), float("-inf"))
        tl.store(out_val_ptr + r64 * K + p, val, mask=out)
