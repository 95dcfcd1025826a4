"""CUDA backend of npu_vllm_quant_lightning_indexer_metadata: format v1 in one Triton launch.

Same schedule as `custom_ops.metadata.compute` (tested equal), but as a single one-program kernel
instead of ~30 small torch launches: the op runs once per decode step, so its latency is launch
latency. Rows (b, qb) are scanned in blocks: pass 1 totals the work units, pass 2 finds each
worker's first unit (searchsorted of the running unit count, done as a [W, BLOCK_R] comparison).
Static shapes only, no host sync: capturable in a CUDA graph.
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from ... import _checks, metadata as md
from .configs import split_params
from .launch import device_properties, empty, launch


@triton.jit
def _row_units(asq_ptr, ask_ptr, rows, R, B, S1, q_block, QB, k_block, keys_max,
               HAS_ASQ: tl.constexpr, TND: tl.constexpr, LEADING_ZERO: tl.constexpr,
               CMP: tl.constexpr, CAUSAL: tl.constexpr):
    """Work units of rows (b, qb), int64, exactly as metadata.compute counts them, the keys of a
    row clamped at `keys_max` (a key window's block table)."""
    in_range = rows < R
    b = rows // QB
    qb = rows % QB
    if TND:
        if LEADING_ZERO:
            s1 = tl.load(asq_ptr + b + 1, mask=in_range, other=0) - \
                tl.load(asq_ptr + b, mask=in_range, other=0)
        else:
            s1 = tl.load(asq_ptr + b, mask=in_range, other=0) - \
                tl.load(asq_ptr + b - 1, mask=in_range & (b > 0), other=0)
    elif HAS_ASQ:
        s1 = tl.load(asq_ptr + b, mask=in_range, other=0)
    else:
        s1 = tl.zeros_like(b) + S1
    s1 = s1.to(tl.int64)
    s2 = tl.load(ask_ptr + b, mask=in_range, other=0).to(tl.int64)
    if q_block > 0:
        last = tl.minimum((qb + 1) * q_block, s1) - 1
        live = last >= qb * q_block
    else:
        last = s1 - 1
        live = last >= 0
    # C division differs from compute's floor only for negative numerators, clamped to 0 either way
    keys = s2 // CMP
    if CAUSAL:
        keys = tl.minimum(keys, (s2 - s1 + last + 1) // CMP)
    keys = tl.minimum(tl.maximum(keys, 0), keys_max)
    return tl.where(in_range & live, (keys + k_block - 1) // k_block, 0)


@triton.jit
def _indexer_metadata_kernel(
        asq_ptr, ask_ptr,  # [B] / [B+1] int32 (or unused), [B] int32
        out_ptr,  # int32 [1024]
        B, R, S1, q_block, QB, k_block, sparse_count,
        window_keys,  # > 0: program w schedules key window w, whose key lengths are row w of
        # ask_ptr [windows, B] and whose block table holds window_keys keys
        W: tl.constexpr, W_PAD: tl.constexpr, BLOCK_R: tl.constexpr, HAS_ASQ: tl.constexpr,
        TND: tl.constexpr, LEADING_ZERO: tl.constexpr, CMP: tl.constexpr, CAUSAL: tl.constexpr,
        FORMAT_ID: tl.constexpr, BACKEND: tl.constexpr, HEADER: tl.constexpr, LEN: tl.constexpr):
    # unit counts fit int32 (the format stores them so); products w * total need int64
    win = tl.program_id(0)
    keys_max = tl.where(window_keys > 0, window_keys, 2147483647).to(tl.int64)
    ask_ptr += win * B
    out_ptr += win * LEN
    total = tl.zeros([], dtype=tl.int32)
    for r0 in range(0, R, BLOCK_R):
        rows = r0 + tl.arange(0, BLOCK_R)
        units = _row_units(asq_ptr, ask_ptr, rows, R, B, S1, q_block, QB, k_block, keys_max,
                           HAS_ASQ, TND, LEADING_ZERO, CMP, CAUSAL)
        total += tl.sum(units.to(tl.int32), 0)
    w = tl.arange(0, W_PAD)
    first = (w.to(tl.int64) * total // W).to(tl.int32)
    nxt = ((w + 1).to(tl.int64) * total // W).to(tl.int32)
    row = tl.zeros([W_PAD], dtype=tl.int32)
    before = tl.zeros([W_PAD], dtype=tl.int32)
    carry = tl.zeros([], dtype=tl.int32)
    for r0 in range(0, R, BLOCK_R):
        rows = r0 + tl.arange(0, BLOCK_R)
        units = _row_units(asq_ptr, ask_ptr, rows, R, B, S1, q_block, QB, k_block, keys_max,
                           HAS_ASQ, TND, LEADING_ZERO, CMP, CAUSAL)
        cum = carry + tl.cumsum(units.to(tl.int32), 0)
        le = (cum[None, :] <= first[:, None]) & (rows < R)[None, :]
        row += tl.sum(le.to(tl.int32), 1)
        before = tl.maximum(before, tl.max(tl.where(le, cum[None, :], 0), 1))
        carry = tl.max(cum, 0)
    empty = row >= R
    b = tl.where(empty, B, row // QB)
    qb = tl.where(empty, 0, row % QB)
    kb = tl.where(empty, 0, first - before)
    rec = out_ptr + HEADER + 4 * w
    wm = w < W
    tl.store(rec, b.to(tl.int32), mask=wm)
    tl.store(rec + 1, qb.to(tl.int32), mask=wm)
    tl.store(rec + 2, kb.to(tl.int32), mask=wm)
    tl.store(rec + 3, (nxt - first).to(tl.int32), mask=wm)
    tail = HEADER + 4 * W + tl.arange(0, LEN)
    tl.store(out_ptr + tail, tl.zeros([LEN], dtype=tl.int32), mask=tail < LEN)
    h = tl.arange(0, HEADER)
    fields = tl.where(h == 0, FORMAT_ID, 0) + tl.where(h == 1, BACKEND, 0) + tl.where(h == 2, W, 0) \
        + tl.where(h == 3, q_block, 0) + tl.where(h == 4, k_block, 0) + tl.where(h == 5, B, 0) \
        + tl.where(h == 6, total, 0) + tl.where(h == 7, QB, 0) \
        + tl.where(h == 8, sparse_count, 0) + tl.where(h == 9, 3 if CAUSAL else 0, 0) \
        + tl.where(h == 10, CMP, 0) + tl.where(h == 11, 1 if TND else 0, 0)
    tl.store(out_ptr + h, fields)


def num_workers(device) -> int:
    """Workers of the CUDA schedule: one per SM (capped by the format's record count)."""
    return min(device_properties(torch.device(device)).multi_processor_count, md.MAX_WORKERS)


def indexer_metadata(actual_seq_lengths_query, actual_seq_lengths_key, *, batch, max_seqlen_q,
                     layout_query, sparse_count, sparse_mode, cmp_ratio, workers,
                     out=None, window_keys=0) -> torch.Tensor:
    """Launch the metadata kernel for lengths already on the target device (checked by the
    caller). window_keys > 0: one schedule per key window ([windows, 1024], one launch) for
    key lengths [windows, B], each window's block table holding window_keys keys."""
    params = split_params(workers, max_seqlen_q)
    q_block = params.q_block if (params.q_block > 0 and max_seqlen_q > 0) else 0
    qb_count = -(-max_seqlen_q // q_block) if q_block else 1
    ask = actual_seq_lengths_key
    asq = actual_seq_lengths_query
    windows = ask.shape[0] if window_keys else 1
    tnd = layout_query == "TND"
    if out is None:
        shape = (windows, md.METADATA_LEN) if window_keys else (md.METADATA_LEN,)
        out = empty(shape, dtype=torch.int32, device=ask.device, stand_in=False)
    launch(_indexer_metadata_kernel, (windows,),
        ask if asq is None else asq, ask, out, batch, batch * qb_count, max_seqlen_q, q_block,
        qb_count, params.k_block, sparse_count, window_keys,
        W=workers, W_PAD=triton.next_power_of_2(workers), BLOCK_R=64,
        HAS_ASQ=asq is not None, TND=tnd, LEADING_ZERO=tnd and asq.shape[0] == batch + 1,
        CMP=cmp_ratio, CAUSAL=sparse_mode == 3, FORMAT_ID=md.FORMAT_ID, BACKEND=md.BACKEND_CUDA,
        HEADER=md.HEADER_LEN, LEN=md.METADATA_LEN, num_warps=8)
    return out


@torch.library.impl("custom::npu_vllm_quant_lightning_indexer_metadata", "CUDA")
def npu_vllm_quant_lightning_indexer_metadata(**kwargs):
    kw = _checks.metadata_arguments(kwargs)
    batch = _checks.check_metadata_args(**kw)
    dev = kw["actual_seq_lengths_key"].device
    with torch.cuda.device(dev):  # Triton launches on the current device
        return indexer_metadata(kw["actual_seq_lengths_query"], kw["actual_seq_lengths_key"],
                                batch=batch, max_seqlen_q=kw["max_seqlen_q"],
                                layout_query=kw["layout_query"], sparse_count=kw["sparse_count"],
                                sparse_mode=kw["sparse_mode"], cmp_ratio=kw["cmp_ratio"],
                                workers=num_workers(dev))
