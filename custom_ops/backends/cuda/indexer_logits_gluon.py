"""Phase 1 of the CUDA indexer for int8 decode (next_n <= 4) as a Gluon kernel: the same logits
as `indexer_logits._indexer_logits_kernel` (paths 1 and 2 with page-contiguous key tiles by
TMA), with the work split between warps instead of repeated by each.

Why: on the H200 the logits pass is bound by the instructions each key tile issues (NOTES,
sessions 10-11): the tensor cores hide only part of an epilogue under the dots, so every
instruction of the loop costs time. In the Triton kernel every warp of the warpgroup issues
the tile's TMA copy, its barrier and pipeline bookkeeping and the block-table read, and the
scores reach memory through a shared-memory layout change with four barriers per tile. Here
one loader warp issues the copies (the key tile, its scales and the stacked query, each by
TMA, the tile and its scales on one mbarrier) and the consumer warpgroup only waits, dots and
runs the epilogue, storing each score straight from the accumulator's register layout. One
CTA per metadata worker holds two such loader/consumer pairs, each taking half of the worker's
units (as two programs of the Triton kernel do): with warp specialization the loader warp is
padded to a warpgroup, and two CTAs per SM would leave a consumer too few registers for the
two 64 x 128 int32 accumulators of four stacked tokens.

Both partitions walk the metadata's schedule exactly as the Triton kernel does (the same share
of the same worker's units per program), so the two kernels write the same logits, bit for bit.
"""
from __future__ import annotations

import torch
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (mbarrier, tma, warpgroup_mma,
                                                              warpgroup_mma_wait)
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

from .indexer_logits import (_head_sums, _store_scores, batch_rows, header_ok, next_row,
                             row_share, visible_keys, worker_share)
from .launch import launch

# one CTA per SM: two consumer warpgroups (each 2 x 64 int32 accumulators of 64 x 128 and the
# epilogue) and two loader warps (scalars only), within the SM's 64K registers
CONSUMER_REGISTERS = gl.constexpr(232)
LOADER_REGISTERS = gl.constexpr(24)


def applies(query, kscale, mode: int, nq: int, split: bool, block_k: int) -> bool:
    """Whether this kernel can run a call whose key tiles are page-contiguous and whose cache a
    TMA descriptor can describe (the caller checks both): int8 decode (one token, two, or four
    stacked as two halves: a dot is at most 128 columns) in 64-key tiles, and key scales and
    query describable by TMA too (16-byte aligned bases and strides, unit innermost strides)."""
    def tma_ok(t, strides):
        return t.data_ptr() % 16 == 0 and all(s * t.element_size() % 16 == 0 for s in strides)
    return (query.dtype == torch.int8 and mode in (1, 2) and nq in (1, 2, 4)
            and (nq // 2 if split else nq) <= 2 and block_k == 64
            and kscale.stride(1) == 1 and tma_ok(kscale, [kscale.stride(0)])
            and query.is_contiguous() and tma_ok(query, []))


def launch_logits(workers, query, weights, qscale, key, kscale, block_table, asq, ask, meta, check,
                  err, logits, stride, batch, s1, rows, num_blocks, width, cmp_ratio, *, nq,
                  split, stages, common, FORMAT_ID, BACKEND, HEADER):
    """The kernel, one CTA per metadata worker, over descriptors of the cache [NB, PAGE, D],
    its scales [NB, PAGE] and the query [R·H, D] (one stacked block of nq tokens per copy)."""
    nb, page, _, d = key.shape
    h = query.shape[-2]
    kd = TensorDescriptor(key, [nb, page, d], [key.stride(0), key.stride(1), 1], [1, 64, d],
                          gl.NVMMASharedLayout.get_default_for([1, 64, d], gl.int8))
    bits = kscale.element_size() * 8
    ksd = TensorDescriptor(kscale, [nb, page], [kscale.stride(0), 1], [1, 64],
                           gl.NVMMASharedLayout(swizzle_byte_width=0, element_bitwidth=bits,
                                                rank=2))
    q2 = query.view(-1, d)
    qd = TensorDescriptor(q2, list(q2.shape), list(q2.stride()), [nq * h, d],
                          gl.NVMMASharedLayout.get_default_for([nq * h, d], gl.int8))
    launch(_indexer_logits_gluon_kernel, (workers,), kd, ksd, qd, weights, qscale, block_table,
           block_table.stride(0), asq, ask, meta, check, err, logits, stride, batch, s1, rows,
           num_blocks, width, cmp_ratio, PAGE=page, NQ=nq, SPLIT=split, STAGES=stages, BLOCK_K=64,
           P=2, H=h, D=d, FORMAT_ID=FORMAT_ID, BACKEND=BACKEND, HEADER=HEADER,
           num_warps=4, **common)


@gluon.jit
def _row(asq_ptr, ask_ptr, b, qb, kb, i, lo, hi, q_block, k_block, S1, T, KEYS_MAX, CMP,
         CAUSAL: gl.constexpr, TND: gl.constexpr, HAS_ASQ: gl.constexpr,
         LEADING_ZERO: gl.constexpr):
    """Unit row (b, qb) from key block kb on, at position i of the worker's range: its first
    output row, query tokens [s_lo, s_hi) of s1, key length s2, the keys [j0, j1) of it in the
    share [lo, hi) (j1 == j0: none), and its units (how far i moves on)."""
    row0, s1 = batch_rows(asq_ptr, b, S1, T, HAS_ASQ, TND, LEADING_ZERO)
    s2 = gl.load(ask_ptr + b)
    s_lo = 0
    s_hi = s1
    if q_block > 0:
        s_lo = qb * q_block
        s_hi = gl.minimum(s_lo + q_block, s1)
    keys, run, a, e = row_share(s1, s2, s_lo, s_hi, kb, i, lo, hi, k_block, KEYS_MAX, CMP, CAUSAL)
    j0 = (kb + a - i) * k_block
    j1 = gl.where(a < e, gl.minimum((kb + e - i) * k_block, keys), j0)
    return row0, s1, s2, s_lo, s_hi, j0, j1, run


@gluon.jit
def _loader(k_desc, ks_desc, q_desc, bt_ptr, stride_bt, asq_ptr, ask_ptr, md_ptr,
            k_smem, ks_smem, q_smem, ready, empty, q_ready, q_empty,
            ok, B, S1, T, NUM_BLOCKS, KEYS_MAX, CMP, PAGE: gl.constexpr, CAUSAL: gl.constexpr,
            TND: gl.constexpr, HAS_ASQ: gl.constexpr, LEADING_ZERO: gl.constexpr,
            STAGES: gl.constexpr, P: gl.constexpr, SUB: gl.constexpr, BLOCK_K: gl.constexpr,
            H: gl.constexpr, HEADER: gl.constexpr):
    """One warp, for consumer SUB: per segment the stacked query (into q_smem, that consumer's),
    per key tile the tile and its scales (into that consumer's ring of STAGES buffers)."""
    if ok:
        q_block, k_block, QB, b, qb, kb, lo, hi = worker_share(md_ptr, gl.program_id(0), SUB, P,
                                                              HEADER)
        i = 0
        c = 0  # key tiles so far: stage c % STAGES, its use (c // STAGES)
        seg = 0  # segments so far (the query buffer's uses)
        while (i < hi) & (b >= 0) & (b < B):
            row0, s1, s2, s_lo, s_hi, j0, j1, run = _row(
                asq_ptr, ask_ptr, b, qb, kb, i, lo, hi, q_block, k_block, S1, T, KEYS_MAX, CMP,
                CAUSAL, TND, HAS_ASQ, LEADING_ZERO)
            if j0 < j1:
                mbarrier.wait(q_empty, (seg & 1) ^ 1)
                mbarrier.expect(q_ready, q_desc.block_type.nbytes)
                tma.async_copy_global_to_shared(q_desc, [(row0 + s_lo) * H, 0], q_ready, q_smem)
                bt_row = bt_ptr + b.to(gl.int64) * stride_bt
                for t in range(j0, j1, BLOCK_K):
                    s = SUB * STAGES + c % STAGES
                    mbarrier.wait(empty.index(s), ((c // STAGES) & 1) ^ 1)
                    page = gl.load(bt_row + t // PAGE)
                    page = gl.minimum(gl.maximum(page, 0), NUM_BLOCKS - 1)  # never out of the cache
                    mbarrier.expect(ready.index(s),
                                    k_desc.block_type.nbytes + ks_desc.block_type.nbytes)
                    tma.async_copy_global_to_shared(k_desc, [page, t % PAGE, 0], ready.index(s),
                                                    k_smem.index(s))
                    tma.async_copy_global_to_shared(ks_desc, [page, t % PAGE], ready.index(s),
                                                    ks_smem.index(s))
                    c += 1
                seg += 1
            i += run
            kb = 0
            b, qb = next_row(b, qb, QB)


@gluon.jit
def _store_half(out_ptr, stride_out, KEYS_MAX, rows, vis, j, j0, score):
    """Scores [BLOCK_K, NH] of keys j for rows `rows`, each up to its `vis` keys, none below j0."""
    jj = gl.expand_dims(j, 1)
    _store_scores(out_ptr + gl.expand_dims(rows, 0) * stride_out, KEYS_MAX, jj, score,
                  (jj >= j0) & (jj < gl.expand_dims(vis, 0)))


@gluon.jit
def _half_tokens(w_ptr, qs_ptr, row0, g, s_hi, s1, s2, j1, CMP, CAUSAL: gl.constexpr,
                 NH: gl.constexpr, H: gl.constexpr, TOK: gl.constexpr, COL: gl.constexpr):
    """Tokens [g, g + NH): output rows and visible keys (0 for tokens past s_hi) in layout TOK,
    and their head weights weights·qscale [NH·H] (0 for those tokens) in layout COL."""
    tok = gl.arange(0, NH, layout=TOK)
    live = g + tok < s_hi
    vis = gl.where(live, gl.minimum(visible_keys(g + tok, s1, s2, CMP, CAUSAL), j1), 0)
    rows = (row0 + g + tok).to(gl.int64)
    col = gl.arange(0, NH * H, layout=COL)
    qrow = row0 + g + col // H
    qm = g + col // H < s_hi
    qh = qrow.to(gl.int64) * H + col % H
    qa = gl.load(w_ptr + qh, mask=qm, other=0.0).to(gl.float32) * \
        gl.load(qs_ptr + qh, mask=qm, other=0.0).to(gl.float32)
    return rows, vis, qa


@gluon.jit
def _consumer(w_ptr, qs_ptr, asq_ptr, ask_ptr, md_ptr, out_ptr, stride_out,
              k_smem, ks_smem, q_smem, ready, empty, q_ready, q_empty,
              ok, B, S1, T, KEYS_MAX, CMP, CAUSAL: gl.constexpr, TND: gl.constexpr,
              HAS_ASQ: gl.constexpr, LEADING_ZERO: gl.constexpr, NQ: gl.constexpr,
              SPLIT: gl.constexpr, STAGES: gl.constexpr, P: gl.constexpr, SUB: gl.constexpr,
              BLOCK_K: gl.constexpr, H: gl.constexpr, D: gl.constexpr,
              HEADER: gl.constexpr):
    """One warpgroup, share SUB of the worker's units: per key tile the dots against the
    stacked query (as two halves with SPLIT, both issued before either epilogue) and the
    scores stored from the registers."""
    NH: gl.constexpr = NQ // 2 if SPLIT else NQ
    mma: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1],
                                                  instr_shape=[16, NH * H, 32])
    zero = gl.zeros([BLOCK_K, NH * H], gl.int32, mma)
    # the scores' layout: what the head sum of the accumulator leaves (compile time only)
    SL: gl.constexpr = gl.sum(gl.reshape(zero.to(gl.float32), [BLOCK_K, NH, H]),
                              axis=2).type.layout
    KEY: gl.constexpr = gl.SliceLayout(1, SL)
    TOK: gl.constexpr = gl.SliceLayout(0, SL)
    COL: gl.constexpr = gl.SliceLayout(0, mma)
    if ok:
        q_block, k_block, QB, b, qb, kb, lo, hi = worker_share(md_ptr, gl.program_id(0), SUB, P,
                                                              HEADER)
        i = 0
        c = 0
        seg = 0
        offs_k = gl.arange(0, BLOCK_K, layout=KEY)
        while (i < hi) & (b >= 0) & (b < B):
            row0, s1, s2, s_lo, s_hi, j0, j1, run = _row(
                asq_ptr, ask_ptr, b, qb, kb, i, lo, hi, q_block, k_block, S1, T, KEYS_MAX, CMP,
                CAUSAL, TND, HAS_ASQ, LEADING_ZERO)
            if j0 < j1:
                rows0, vis0, qa0 = _half_tokens(w_ptr, qs_ptr, row0, s_lo, s_hi, s1, s2, j1, CMP,
                                                CAUSAL, NH, H, TOK, COL)
                if SPLIT:
                    rows1, vis1, qa1 = _half_tokens(w_ptr, qs_ptr, row0, s_lo + NH, s_hi, s1, s2,
                                                    j1, CMP, CAUSAL, NH, H, TOK, COL)
                mbarrier.wait(q_ready, seg & 1)
                q0 = q_smem.slice(0, NH * H).permute((1, 0))
                for t in range(j0, j1, BLOCK_K):
                    s = SUB * STAGES + c % STAGES
                    mbarrier.wait(ready.index(s), (c // STAGES) & 1)
                    k = k_smem.index(s).reshape([BLOCK_K, D])
                    x0 = warpgroup_mma(k, q0, zero, use_acc=False, is_async=True)
                    if SPLIT:
                        x1 = warpgroup_mma(k, q_smem.slice(NH * H, NH * H).permute((1, 0)), zero,
                                           use_acc=False, is_async=True)
                        x0, x1 = warpgroup_mma_wait(num_outstanding=0, deps=(x0, x1))
                    else:
                        x0 = warpgroup_mma_wait(num_outstanding=0, deps=(x0,))
                    ks = ks_smem.index(s).reshape([BLOCK_K]).load(KEY).to(gl.float32)
                    mbarrier.arrive(empty.index(s))
                    j = t + offs_k
                    _store_half(out_ptr, stride_out, KEYS_MAX, rows0, vis0, j, j0,
                                _head_sums(x0, ks, qa0, NH, H))
                    if SPLIT:
                        _store_half(out_ptr, stride_out, KEYS_MAX, rows1, vis1, j, j0,
                                    _head_sums(x1, ks, qa1, NH, H))
                    c += 1
                mbarrier.arrive(q_empty)
                seg += 1
            i += run
            kb = 0
            b, qb = next_row(b, qb, QB)


@gluon.jit
def _indexer_logits_gluon_kernel(
        k_desc, ks_desc, q_desc,  # TMA: cache [NB, PAGE, D], its scales [NB, PAGE], query [R·H, D]
        w_ptr, qs_ptr,  # [R, H], [R, H]
        bt_ptr, stride_bt, asq_ptr, ask_ptr,
        md_ptr, chk_ptr, err_ptr,  # as in _indexer_logits_kernel
        out_ptr, stride_out,
        B, S1, T, NUM_BLOCKS, KEYS_MAX, CMP,
        PAGE: gl.constexpr, CAUSAL: gl.constexpr, TND: gl.constexpr, HAS_ASQ: gl.constexpr,
        LEADING_ZERO: gl.constexpr, NQ: gl.constexpr, SPLIT: gl.constexpr,
        STAGES: gl.constexpr, BLOCK_K: gl.constexpr, P: gl.constexpr, H: gl.constexpr,
        D: gl.constexpr, FORMAT_ID: gl.constexpr, BACKEND: gl.constexpr, HEADER: gl.constexpr):
    W = gl.num_programs(0)
    ok = header_ok(md_ptr, W, B, CMP, BLOCK_K, CAUSAL, TND, FORMAT_ID, BACKEND)
    ok = ok & header_ok(chk_ptr, W, B, CMP, BLOCK_K, CAUSAL, TND, FORMAT_ID, BACKEND)
    if gl.program_id(0) == 0:
        gl.store(err_ptr, gl.where(ok, 0, 1))
    # per consumer: a ring of STAGES key tiles and scales, and its stacked query
    k_smem = gl.allocate_shared_memory(k_desc.dtype, [P * STAGES] + k_desc.block_type.shape,
                                       k_desc.layout)
    ks_smem = gl.allocate_shared_memory(ks_desc.dtype, [P * STAGES] + ks_desc.block_type.shape,
                                        ks_desc.layout)
    q_smem = gl.allocate_shared_memory(q_desc.dtype, [P] + q_desc.block_type.shape,
                                       q_desc.layout)
    ready = gl.allocate_shared_memory(gl.int64, [P * STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [P * STAGES, 1], mbarrier.MBarrierLayout())
    q_ready = gl.allocate_shared_memory(gl.int64, [P, 1], mbarrier.MBarrierLayout())
    q_empty = gl.allocate_shared_memory(gl.int64, [P, 1], mbarrier.MBarrierLayout())
    for s in gl.static_range(P * STAGES):
        mbarrier.init(ready.index(s), count=1)
        mbarrier.init(empty.index(s), count=1)
    for s in gl.static_range(P):
        mbarrier.init(q_ready.index(s), count=1)
        mbarrier.init(q_empty.index(s), count=1)
    SUB0: gl.constexpr = 0
    SUB1: gl.constexpr = 1
    gl.warp_specialize([
        (_consumer, (w_ptr, qs_ptr, asq_ptr, ask_ptr, md_ptr, out_ptr, stride_out, k_smem,
                     ks_smem, q_smem.index(0), ready, empty, q_ready.index(0),
                     q_empty.index(0), ok, B, S1, T, KEYS_MAX, CMP, CAUSAL, TND, HAS_ASQ,
                     LEADING_ZERO, NQ, SPLIT, STAGES, P, SUB0,
                     BLOCK_K, H, D, HEADER)),
        (_consumer, (w_ptr, qs_ptr, asq_ptr, ask_ptr, md_ptr, out_ptr, stride_out, k_smem,
                     ks_smem, q_smem.index(1), ready, empty, q_ready.index(1),
                     q_empty.index(1), ok, B, S1, T, KEYS_MAX, CMP, CAUSAL, TND, HAS_ASQ,
                     LEADING_ZERO, NQ, SPLIT, STAGES, P, SUB1,
                     BLOCK_K, H, D, HEADER)),
        (_loader, (k_desc, ks_desc, q_desc, bt_ptr, stride_bt, asq_ptr, ask_ptr, md_ptr, k_smem,
                   ks_smem, q_smem.index(0), ready, empty, q_ready.index(0), q_empty.index(0),
                   ok, B, S1, T, NUM_BLOCKS, KEYS_MAX, CMP, PAGE, CAUSAL, TND, HAS_ASQ,
                   LEADING_ZERO, STAGES, P, SUB0,
                   BLOCK_K, H, HEADER)),
        (_loader, (k_desc, ks_desc, q_desc, bt_ptr, stride_bt, asq_ptr, ask_ptr, md_ptr, k_smem,
                   ks_smem, q_smem.index(1), ready, empty, q_ready.index(1), q_empty.index(1),
                   ok, B, S1, T, NUM_BLOCKS, KEYS_MAX, CMP, PAGE, CAUSAL, TND, HAS_ASQ,
                   LEADING_ZERO, STAGES, P, SUB1,
                   BLOCK_K, H, HEADER)),
    ], [4, 1, 1], [CONSUMER_REGISTERS, LOADER_REGISTERS, LOADER_REGISTERS])
