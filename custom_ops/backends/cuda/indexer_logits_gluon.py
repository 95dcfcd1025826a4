"""Phase 1 of the CUDA indexer for int8 and fp8 decode (next_n <= 4) as a Gluon kernel: the same
logits as `indexer_logits._indexer_logits_kernel` (paths 1 and 2 with page-contiguous key tiles
by TMA), with the work split between warps instead of repeated by each.

Why: on the H200 the logits pass is bound by the instructions each key tile issues (NOTES,
sessions 10-11): the tensor cores hide only part of an epilogue under the dots, so every
instruction of the loop costs time. In the Triton kernel every warp of the warpgroup issues
the tile's TMA copy, its barrier and pipeline bookkeeping and the block-table read, and the
scores reach memory through a shared-memory layout change with four barriers per tile. Here
one loader warp issues the copies (the key tile, its scales and the stacked query, each by
TMA, the tile and its scales on one mbarrier) and the consumer warpgroup only waits, dots and
runs the epilogue, storing each score straight from the accumulator's register layout. One
CTA per metadata worker holds two such loader/consumer pairs, each taking half of the worker's
key tiles (as two programs of the Triton kernel take half its units): with warp specialization
the loader warp is padded to a warpgroup, and two CTAs per SM would leave a consumer too few
registers for the two 64 x 128 int32 accumulators of four stacked tokens.

fp8 (e4m3, dotted as exact fp16 with fp32 accumulation like the Triton kernel, SPEC §1.4): the
consumer converts its stacked query to fp16 in shared memory once per segment and each key tile
to fp16 registers as the dot's A operand, the next tile's while the current dots run. On the
H200 this beats the Triton kernel where each SM has few key tiles (B=1 64K: 31.3 -> 25.7 µs;
B=64 64K: 211 -> 218-234 µs; NOTES, session 12). Where each SM has many, one-token fp8 calls
run it as two CTAs per worker (CTAS = 2: four consumers per SM of 104 registers, the A operand
read after its tile's wait instead of prefetched, 4-stage rings), which hides the fp16 dots
(half int8's rate) as the Triton kernel's four programs per SM do, with fewer instructions
per tile (B=64 64K: 187.7 -> 182.8 µs; NOTES, session 25). configs says which calls take which.

Both partitions walk the metadata's schedule as the Triton kernel does, each pair a contiguous
share of its worker's key tiles (the Triton kernel's programs share whole units), and score
every key as it does, so the two kernels write the same logits, bit for bit.
Large int8 one-token calls share work (STEAL, LogitsConfig.gluon_steal_keys): a pair done with
its share takes parts of units from the back of other pairs' shares, its loader passing each
part to its consumer as a descriptor in shared memory, because the static split otherwise waits
for its slowest SMs (~8-10 µs at B=64, 64K keys; NOTES, sessions 16 and 26). A part scored by
two pairs is written twice with the same bits.
"""
from __future__ import annotations

import functools

import torch
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (fence_async_shared, mbarrier, tma,
                                                              warpgroup_mma, warpgroup_mma_wait)
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

from .indexer_logits import (_head_sums, _store_scores, batch_rows, dot_order, header_ok,
                             next_row, row_units, tile_range, visible_keys, worker_share)
from .configs import K_BLOCK
from .launch import launch, tma_aligned

# one CTA per SM: two consumer warpgroups (each up to two 64 x 128 accumulators and the
# epilogue) and two loader warps (scalars only), within the SM's 64K registers
CONSUMER_REGISTERS = gl.constexpr(232)
PAIRS = gl.constexpr(2)  # consumer/loader pairs per CTA (the warp_specialize list below)
LOADER_REGISTERS = gl.constexpr(24)
# two CTAs per SM (fp8, one token: one 64 x 64 accumulator, no prefetched A operand): each CTA
# starts its 12 warps (the loader warps padded to a warpgroup) at TWO_CTAS_MAXNREG registers,
# which setmaxnreg then moves from the loaders to the consumers; more than the CTA holds would
# leave the consumers waiting for registers forever
TWO_CTAS_MAXNREG = 80
TWO_CTAS_CONSUMER_REGISTERS = gl.constexpr(104)
TWO_CTAS_STAGES = 4  # two CTAs' rings of 5 stages would not fit an SM's shared memory
assert 2 * TWO_CTAS_CONSUMER_REGISTERS.value + LOADER_REGISTERS.value <= 3 * TWO_CTAS_MAXNREG
assert 2 * 3 * 128 * TWO_CTAS_MAXNREG <= 65536


def applies(query, kscale, mode: int, nq: int, split: bool, block_k: int,
            fp8_as_f16: bool, ctas: int = 1) -> bool:
    """Whether this kernel can run a call whose key tiles are page-contiguous and whose cache a
    TMA descriptor can describe (the caller checks both): int8 decode, or fp8 decode dotted as
    exact fp16 (one token, two, or four stacked as two halves: a dot is at most 128 columns) in
    64-key tiles, and key scales and query describable by TMA too (16-byte aligned bases and
    strides, unit innermost strides). Two CTAs per worker: fp8, one token only."""
    dtype_ok = query.dtype == torch.int8 or (query.dtype == torch.float8_e4m3fn and fp8_as_f16)
    if ctas not in (1, 2) or ctas == 2 and (query.dtype == torch.int8 or nq != 1):
        return False
    return (dtype_ok and mode in (1, 2) and nq in (1, 2, 4)
            and (nq // 2 if split else nq) <= 2 and block_k == 64
            and kscale.stride(1) == 1 and tma_aligned(kscale, [kscale.stride(0)])
            and query.is_contiguous() and tma_aligned(query, []))


@functools.lru_cache(maxsize=None)
def _layouts(fp8: bool, d: int, scale_bits: int, q_rows: int):
    """Shared-memory layouts of a key tile, its scales and the stacked query (built once per
    shape: constructing them took ~40 % of an eager call's host time)."""
    dtype = gl.float8e4nv if fp8 else gl.int8
    return (gl.NVMMASharedLayout.get_default_for([1, 64, d], dtype),
            gl.NVMMASharedLayout(swizzle_byte_width=0, element_bitwidth=scale_bits, rank=2),
            gl.NVMMASharedLayout.get_default_for([q_rows, d], gl.float16 if fp8 else gl.int8))


def launch_logits(workers, query, weights, qscale, key, kscale, block_table, asq, ask, meta, check,
                  err, logits, stride, batch, s1, rows, num_blocks, width, cmp_ratio, *, nq,
                  split, stages, pdl, common, FORMAT_ID, BACKEND, HEADER, ctas=1, steal=None):
    """The kernel, `ctas` CTAs per metadata worker, over descriptors of the cache [NB, PAGE, D]
    and its scales [NB, PAGE]; the int8 query by a descriptor of [R·H, D] (one stacked block of
    nq tokens per copy), the fp8 one by its pointer (each consumer converts its block to fp16)."""
    nb, page, _, d = key.shape
    h = query.shape[-2]
    fp8 = key.dtype != torch.int8
    k_layout, ks_layout, q_layout = _layouts(fp8, d, kscale.element_size() * 8, nq * h)
    kd = TensorDescriptor(key, [nb, page, d], [key.stride(0), key.stride(1), 1], [1, 64, d],
                          k_layout)
    ksd = TensorDescriptor(kscale, [nb, page], [kscale.stride(0), 1], [1, 64], ks_layout)
    if fp8:
        qd = query
    else:
        q2 = query.view(-1, d)
        qd = TensorDescriptor(q2, list(q2.shape), list(q2.stride()), [nq * h, d], q_layout)
    if ctas == 2:
        common = dict(common, maxnreg=TWO_CTAS_MAXNREG)
        stages = min(stages, TWO_CTAS_STAGES)
    if steal is not None:
        common = dict(common, STEAL=True)
    launch(_indexer_logits_gluon_kernel, (workers * ctas,), kd, ksd, qd, weights, qscale,
           block_table, block_table.stride(0), asq, ask, meta, check, err, logits, stride,
           err if steal is None else steal, workers * ctas * PAIRS.value, batch,
           s1, rows, num_blocks, width, cmp_ratio, PAGE=page, NQ=nq, SPLIT=split, STAGES=stages,
           BLOCK_K=64, CTAS=ctas, H=h, D=d, FP8=fp8, Q_LAYOUT=q_layout, FORMAT_ID=FORMAT_ID,
           BACKEND=BACKEND, HEADER=HEADER, PDL=pdl, num_warps=4, **common)


@gluon.jit
def _row_tokens(asq_ptr, ask_ptr, b, qb, q_block, S1, T, TND: gl.constexpr,
                HAS_ASQ: gl.constexpr, LEADING_ZERO: gl.constexpr):
    """Unit row (b, qb): its first output row, s1 query tokens against s2 keys, and its
    tokens [s_lo, s_hi)."""
    row0, s1 = batch_rows(asq_ptr, b, S1, T, HAS_ASQ, TND, LEADING_ZERO)
    s2 = gl.load(ask_ptr + b)
    s_lo = 0
    s_hi = s1
    if q_block > 0:
        s_lo = qb * q_block
        s_hi = gl.minimum(s_lo + q_block, s1)
    return row0, s1, s2, s_lo, s_hi


@gluon.jit
def _row(asq_ptr, ask_ptr, b, qb, kb, i, lo, hi, q_block, k_block, S1, T, KEYS_MAX, CMP,
         CAUSAL: gl.constexpr, TND: gl.constexpr, HAS_ASQ: gl.constexpr,
         LEADING_ZERO: gl.constexpr, BLOCK_K: gl.constexpr):
    """Unit row (b, qb) from key block kb on, at position i of the worker's range (counted in
    key tiles, BLOCK_K keys, as the share [lo, hi) is: _share with BLOCK_K): its first output row, query
    tokens [s_lo, s_hi) of s1, key length s2, the keys [j0, j1) of it in the share (j1 == j0:
    none), and its tiles (how far i moves on; a row's last unit counts whole, its tiles past
    the keys empty)."""
    row0, s1, s2, s_lo, s_hi = _row_tokens(asq_ptr, ask_ptr, b, qb, q_block, S1, T, TND,
                                           HAS_ASQ, LEADING_ZERO)
    keys, units = row_units(s1, s2, s_lo, s_hi, kb, k_block, KEYS_MAX, CMP, CAUSAL)
    j0, j1, run = tile_range(units, kb, i, lo, hi, k_block, keys, BLOCK_K)
    return row0, s1, s2, s_lo, s_hi, j0, j1, run


@gluon.jit
def _share(md_ptr, SUB: gl.constexpr, CTAS: gl.constexpr, HEADER: gl.constexpr,
           BLOCK_K: gl.constexpr = 0):
    """Pair SUB of this CTA: its worker (CTAS consecutive CTAs share one) and share of the
    worker's units (PAIRS per CTA; with BLOCK_K > 0 counted in key tiles: worker_share)."""
    pid = gl.program_id(0)
    return worker_share(md_ptr, pid // CTAS, (pid % CTAS) * PAIRS + SUB, PAIRS * CTAS, HEADER,
                        BLOCK_K)


@gluon.jit
def _copy_tile(k_desc, ks_desc, k_smem, ks_smem, ready, s, bt_row, t, NUM_BLOCKS,
               PAGE: gl.constexpr):
    """Key tile t of a row (its page from the row's block-table entries bt_row) and its scales
    into stage s by TMA, both on the stage's ready barrier; the stage is free (the caller
    waited)."""
    page = gl.load(bt_row + t // PAGE)
    page = gl.minimum(gl.maximum(page, 0), NUM_BLOCKS - 1)  # never out of the cache
    mbarrier.expect(ready.index(s), k_desc.block_type.nbytes + ks_desc.block_type.nbytes)
    tma.async_copy_global_to_shared(k_desc, [page, t % PAGE, 0], ready.index(s), k_smem.index(s))
    tma.async_copy_global_to_shared(ks_desc, [page, t % PAGE], ready.index(s), ks_smem.index(s))


@gluon.jit
def _loader(k_desc, ks_desc, q_desc, bt_ptr, stride_bt, asq_ptr, ask_ptr, md_ptr,
            k_smem, ks_smem, q_smem, ready, empty, q_ready, q_empty,
            ok, B, S1, T, NUM_BLOCKS, KEYS_MAX, CMP, PAGE: gl.constexpr, CAUSAL: gl.constexpr,
            TND: gl.constexpr, HAS_ASQ: gl.constexpr, LEADING_ZERO: gl.constexpr,
            STAGES: gl.constexpr, CTAS: gl.constexpr, SUB: gl.constexpr, BLOCK_K: gl.constexpr,
            H: gl.constexpr, FP8: gl.constexpr, HEADER: gl.constexpr):
    """One warp, for consumer SUB: per segment the stacked int8 query (into q_smem, that
    consumer's; an fp8 one the consumer converts itself), per key tile the tile and its scales
    (into that consumer's ring of STAGES buffers)."""
    if ok:
        # shares of the worker's key tiles, not of its units (whose shares differ by a whole
        # unit: B=64 64K next_n=2 238.8 -> 232.3 µs with tiles, H200, session 27)
        q_block, k_block, QB, b, qb, kb, lo, hi = _share(md_ptr, SUB, CTAS, HEADER, BLOCK_K)
        i = 0
        c = 0  # key tiles so far: stage c % STAGES, its use (c // STAGES)
        seg = 0  # segments so far (the query buffer's uses)
        while (i < hi) & (b >= 0) & (b < B):
            row0, s1, s2, s_lo, s_hi, j0, j1, run = _row(
                asq_ptr, ask_ptr, b, qb, kb, i, lo, hi, q_block, k_block, S1, T, KEYS_MAX, CMP,
                CAUSAL, TND, HAS_ASQ, LEADING_ZERO, BLOCK_K)
            if j0 < j1:
                if not FP8:
                    mbarrier.wait(q_empty, (seg & 1) ^ 1)
                    mbarrier.expect(q_ready, q_desc.block_type.nbytes)
                    tma.async_copy_global_to_shared(q_desc, [(row0 + s_lo) * H, 0], q_ready,
                                                    q_smem)
                bt_row = bt_ptr + b.to(gl.int64) * stride_bt
                for t in range(j0, j1, BLOCK_K):
                    s = SUB * STAGES + c % STAGES
                    mbarrier.wait(empty.index(s), ((c // STAGES) & 1) ^ 1)
                    _copy_tile(k_desc, ks_desc, k_smem, ks_smem, ready, s, bt_row, t, NUM_BLOCKS,
                               PAGE)
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
def _query_f16(q_ptr, q_smem, first, live_tokens, NQ: gl.constexpr, H: gl.constexpr,
               D: gl.constexpr):
    """The fp8 query rows of the NQ tokens from row `first` on into q_smem [NQ·H, D] as fp16
    (exact; the dot's B operand must be fp16 like the keys it meets): the first `live_tokens`
    tokens' rows, zeros for the others (what a TMA copy past the tensor gives the int8 path).
    Read once per segment, where the int8 query is copied by the loader warp."""
    BL: gl.constexpr = gl.BlockedLayout([1, 16], [4, 8], [4, 1], [1, 0])
    r = gl.expand_dims(gl.arange(0, H, layout=gl.SliceLayout(1, BL)), 1)
    d = gl.expand_dims(gl.arange(0, D, layout=gl.SliceLayout(0, BL)), 0)
    for c in gl.static_range(NQ):  # (r < H) & (d < D) only gives the mask its full shape
        v = gl.load(q_ptr + ((first + c).to(gl.int64) * H + r) * D + d,
                    mask=(r < H) & (d < D) & (c < live_tokens), other=0.0)
        q_smem.slice(c * H, H).store(dot_order(v.to(gl.float16)))  # as the keys it meets
    fence_async_shared()  # the generic stores before the tensor cores read them
    gl.thread_barrier()  # every warp's rows


@gluon.jit
def _tile_f16(k_smem, ready, s, use, BLOCK_K: gl.constexpr, D: gl.constexpr,
              A_F16: gl.constexpr):
    """Stage s's fp8 key tile (once its copy, the use-th into that stage, has landed) as fp16
    registers in the layout of a dot's A operand, its K axis in `dot_order`: e4m3 is exact in
    fp16. ROWS is the A operand's layout seen before the reorder, so each thread reads 32
    consecutive bytes of each of its two key rows, and the reorder moves no data."""
    ROWS: gl.constexpr = gl.DistributedLinearLayout(
        reg_bases=[[0, 1], [8, 0], [0, 2], [0, 4], [0, 8], [0, 16]],
        lane_bases=[[0, 32], [0, 64], [1, 0], [2, 0], [4, 0]],
        warp_bases=[[16, 0], [32, 0]], block_bases=[], shape=[BLOCK_K, D])
    mbarrier.wait(ready.index(s), use & 1)
    k = dot_order(k_smem.index(s).reshape([BLOCK_K, D]).load(ROWS))
    return gl.convert_layout(k, A_F16, assert_trivial=True).to(gl.float16)


@gluon.jit
def _tile_operand(k_smem, ready, s, use, BLOCK_K: gl.constexpr, D: gl.constexpr,
                  FP8: gl.constexpr, A_F16: gl.constexpr):
    """Stage s's key tile as a dot's A operand once its copy (the use-th into that stage) has
    landed: fp8 upcast to fp16 registers (_tile_f16), int8 read by the dot from shared memory."""
    if FP8:
        k = _tile_f16(k_smem, ready, s, use, BLOCK_K, D, A_F16)
    else:
        mbarrier.wait(ready.index(s), use & 1)
        k = k_smem.index(s).reshape([BLOCK_K, D])
    return k


@gluon.jit
def _consumer(w_ptr, qs_ptr, asq_ptr, ask_ptr, md_ptr, out_ptr, stride_out,
              k_smem, ks_smem, q_smem, ready, empty, q_ready, q_empty,
              ok, B, S1, T, KEYS_MAX, CMP, CAUSAL: gl.constexpr, TND: gl.constexpr,
              HAS_ASQ: gl.constexpr, LEADING_ZERO: gl.constexpr, NQ: gl.constexpr,
              SPLIT: gl.constexpr, STAGES: gl.constexpr, CTAS: gl.constexpr, SUB: gl.constexpr,
              BLOCK_K: gl.constexpr, H: gl.constexpr, D: gl.constexpr, FP8: gl.constexpr,
              HEADER: gl.constexpr, q_ptr, qa_smem):
    """One warpgroup, share SUB of the worker's key tiles: per key tile the dots against the
    stacked query (as two halves with SPLIT, both issued before either epilogue) and the
    scores stored from the registers. fp8 (FP8): the tile is upcast to fp16 in registers (the
    dot's A operand; e4m3 is exact in fp16) against the query converted once per segment
    (q_ptr), an fp32-accumulated fp16 dot as in the Triton kernel; with one CTA per worker the
    next tile's A operand is read while the current dots run (its registers are what two CTAs
    per worker lack)."""
    NH: gl.constexpr = NQ // 2 if SPLIT else NQ
    PREFETCH: gl.constexpr = FP8 and CTAS == 1
    QA_SMEM: gl.constexpr = FP8 and SPLIT
    mma: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1],
                                                  instr_shape=[16, NH * H, 16 if FP8 else 32])
    A_F16: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=mma, k_width=2)
    zero = gl.zeros([BLOCK_K, NH * H], gl.float32 if FP8 else gl.int32, mma)
    # the scores' layout: what the head sum of the accumulator leaves (compile time only)
    SL: gl.constexpr = gl.sum(gl.reshape(zero.to(gl.float32), [BLOCK_K, NH, H]),
                              axis=2).type.layout
    KEY: gl.constexpr = gl.SliceLayout(1, SL)
    TOK: gl.constexpr = gl.SliceLayout(0, SL)
    COL: gl.constexpr = gl.SliceLayout(0, mma)
    if ok:
        q_block, k_block, QB, b, qb, kb, lo, hi = _share(md_ptr, SUB, CTAS, HEADER, BLOCK_K)
        i = 0
        c = 0
        seg = 0
        offs_k = gl.arange(0, BLOCK_K, layout=KEY)
        while (i < hi) & (b >= 0) & (b < B):
            row0, s1, s2, s_lo, s_hi, j0, j1, run = _row(
                asq_ptr, ask_ptr, b, qb, kb, i, lo, hi, q_block, k_block, S1, T, KEYS_MAX, CMP,
                CAUSAL, TND, HAS_ASQ, LEADING_ZERO, BLOCK_K)
            if j0 < j1:
                rows0, vis0, qa0 = _half_tokens(w_ptr, qs_ptr, row0, s_lo, s_hi, s1, s2, j1, CMP,
                                                CAUSAL, NH, H, TOK, COL)
                if SPLIT:
                    rows1, vis1, qa1 = _half_tokens(w_ptr, qs_ptr, row0, s_lo + NH, s_hi, s1, s2,
                                                    j1, CMP, CAUSAL, NH, H, TOK, COL)
                if QA_SMEM:  # kept in shared memory: registers for the fp16 A operand instead
                    qa_smem.slice(0, NH * H).store(qa0)
                    qa_smem.slice(NH * H, NH * H).store(qa1)
                if FP8:
                    _query_f16(q_ptr, q_smem, row0 + s_lo, s_hi - s_lo, NQ, H, D)
                else:
                    mbarrier.wait(q_ready, seg & 1)
                q0 = q_smem.slice(0, NH * H).permute((1, 0))
                if PREFETCH:  # the first tile's A operand (each next one is read under a dot)
                    a = _tile_f16(k_smem, ready, SUB * STAGES + c % STAGES, c // STAGES,
                                  BLOCK_K, D, A_F16)
                for t in range(j0, j1, BLOCK_K):
                    s = SUB * STAGES + c % STAGES
                    if PREFETCH:
                        k = a
                    else:
                        k = _tile_operand(k_smem, ready, s, c // STAGES, BLOCK_K, D, FP8, A_F16)
                    x0 = warpgroup_mma(k, q0, zero, use_acc=False, is_async=True)
                    if SPLIT:
                        x1 = warpgroup_mma(k, q_smem.slice(NH * H, NH * H).permute((1, 0)), zero,
                                           use_acc=False, is_async=True)
                    if FP8:
                        # the next tile's A operand, read and converted while the dots run (a
                        # warpgroup would otherwise wait on its shared-memory loads every tile)
                        if PREFETCH and t + BLOCK_K < j1:
                            a = _tile_f16(k_smem, ready, SUB * STAGES + (c + 1) % STAGES,
                                          (c + 1) // STAGES, BLOCK_K, D, A_F16)
                        if SPLIT:  # k: registers the dots read until they are done
                            x0, x1, k = warpgroup_mma_wait(num_outstanding=0, deps=(x0, x1, k))
                        else:
                            x0, k = warpgroup_mma_wait(num_outstanding=0, deps=(x0, k))
                    elif SPLIT:
                        x0, x1 = warpgroup_mma_wait(num_outstanding=0, deps=(x0, x1))
                    else:
                        x0 = warpgroup_mma_wait(num_outstanding=0, deps=(x0,))
                    ks = ks_smem.index(s).reshape([BLOCK_K]).load(KEY).to(gl.float32)
                    mbarrier.arrive(empty.index(s))
                    j = t + offs_k
                    if QA_SMEM:
                        a0 = qa_smem.slice(0, NH * H).load(COL)
                        a1 = qa_smem.slice(NH * H, NH * H).load(COL)
                    else:
                        a0 = qa0
                        if SPLIT:
                            a1 = qa1
                    _store_half(out_ptr, stride_out, KEYS_MAX, rows0, vis0, j, j0,
                                _head_sums(x0, ks, a0, NH, H))
                    if SPLIT:
                        _store_half(out_ptr, stride_out, KEYS_MAX, rows1, vis1, j, j0,
                                    _head_sums(x1, ks, a1, NH, H))
                    c += 1
                if FP8:
                    gl.thread_barrier()  # every warp's dots done before the next block's rows
                else:
                    mbarrier.arrive(q_empty)
                seg += 1
            i += run
            kb = 0
            b, qb = next_row(b, qb, QB)


# Work sharing (STEAL; one token per sequence, no prefetched A operand). The share is taken in
# parts (STEAL_PARTS per metadata unit); each pair publishes the end of the parts it will still
# take (E, lowered by others' claims) and how far it has started (P). The owner never waits on a
# claim: before each part it reads E (one part ahead) and stops there; a pair done with its
# share takes parts from the back of another pair's by one atomic decrement of E and keeps each
# taken part that the owner's P has not reached. A part that both start is scored twice, to the
# same bits; none is missed (the owner starts a part only below an E it read, a taker skips
# only parts below the owner's P).
# Parts per unit: same-call A/B (H200, session 26), B64 64K / 128K int8 µs against no sharing
# 177.8 / 324.8: 1 part 176.0 / 321.8, 2 parts 175.2 / 321.6, 4 parts 177.5 / 326.2 (the
# per-part bookkeeping)
STEAL_PARTS = gl.constexpr(2)
STEAL_MIN_LEFT = gl.constexpr(2)  # parts a pair must have left for another to take one
STEAL_STRIDE = gl.constexpr(8)  # lane l of a taker looks at pair (own + 1 + 8·l) % pairs
assert K_BLOCK % (STEAL_PARTS.value * 64) == 0, "a part of a unit is whole 64-key tiles"


@gluon.jit
def _unit_row(asq_ptr, ask_ptr, b, qb, kb, q_block, k_block, S1, T, KEYS_MAX, CMP,
              CAUSAL: gl.constexpr, TND: gl.constexpr, HAS_ASQ: gl.constexpr,
              LEADING_ZERO: gl.constexpr):
    """Unit row (b, qb) from key block kb on: its first output row, first token, keys and
    units."""
    row0, s1, s2, s_lo, s_hi = _row_tokens(asq_ptr, ask_ptr, b, qb, q_block, S1, T, TND,
                                           HAS_ASQ, LEADING_ZERO)
    keys, run = row_units(s1, s2, s_lo, s_hi, kb, k_block, KEYS_MAX, CMP, CAUSAL)
    return row0, s_lo, keys, run


@gluon.jit
def _unit_at(md_ptr, asq_ptr, ask_ptr, v, u, B, S1, T, KEYS_MAX, CMP, CAUSAL: gl.constexpr,
             TND: gl.constexpr, HAS_ASQ: gl.constexpr, LEADING_ZERO: gl.constexpr,
             CTAS: gl.constexpr, HEADER: gl.constexpr):
    """Unit u of pair v's share: its row (b, qb; b = -1 where u is not in the share) and keys
    [j0, j1)."""
    q_block, k_block, QB, b, qb, kb, lo, hi = worker_share(
        md_ptr, v // (PAIRS * CTAS), v % (PAIRS * CTAS), PAIRS * CTAS, HEADER)
    fb = -1
    fqb = 0
    j0 = 0
    j1 = 0
    i = 0
    go = (u >= lo) & (u < hi)
    while go & (b >= 0) & (b < B):
        _, _, keys, run = _unit_row(asq_ptr, ask_ptr, b, qb, kb, q_block, k_block, S1, T,
                                    KEYS_MAX, CMP, CAUSAL, TND, HAS_ASQ, LEADING_ZERO)
        if u < i + run:
            fb = b
            fqb = qb
            j0 = (kb + u - i) * k_block
            j1 = gl.minimum(j0 + k_block, keys)
            go = False
        i += run
        kb = 0
        b, qb = next_row(b, qb, QB)
    return fb, fqb, j0, j1


@gluon.jit
def _issue_part(k_desc, ks_desc, q_desc, bt_ptr, stride_bt, k_smem, ks_smem, q_smem, ready,
                empty, q_ready, q_empty, desc, b, qb, q_row, j0, j1, new_row, c, seg,
                NUM_BLOCKS, PAGE: gl.constexpr, STAGES: gl.constexpr, SUB: gl.constexpr,
                BLOCK_K: gl.constexpr, H: gl.constexpr, FP8: gl.constexpr):
    """A part: the key tiles [j0, j1) of unit row (b, qb), the first one's stage carrying the
    part's descriptor (b, qb, j0, j1); a new row's int8 query (from row q_row) copied after that
    tile (the consumer frees the last one when it reads the descriptor)."""
    DL: gl.constexpr = gl.BlockedLayout([4], [32], [1], [0])
    f = gl.arange(0, 4, layout=DL)
    d = gl.where(f == 0, b, gl.where(f == 1, qb, gl.where(f == 2, j0, j1)))
    bt_row = bt_ptr + b.to(gl.int64) * stride_bt
    for t in range(j0, j1, BLOCK_K):
        s = SUB * STAGES + c % STAGES
        mbarrier.wait(empty.index(s), ((c // STAGES) & 1) ^ 1)
        if t == j0:
            desc.index(s).store(d)
        _copy_tile(k_desc, ks_desc, k_smem, ks_smem, ready, s, bt_row, t, NUM_BLOCKS, PAGE)
        c += 1
        if not FP8:
            if new_row & (t == j0):
                mbarrier.wait(q_empty, (seg & 1) ^ 1)
                mbarrier.expect(q_ready, q_desc.block_type.nbytes)
                tma.async_copy_global_to_shared(q_desc, [q_row * H, 0], q_ready, q_smem)
    return c, seg + new_row.to(gl.int32)


@gluon.jit
def _loader_steal(k_desc, ks_desc, q_desc, bt_ptr, stride_bt, asq_ptr, ask_ptr, md_ptr,
                  steal_ptr, NP, k_smem, ks_smem, q_smem, ready, empty, q_ready, q_empty, desc,
                  ok, B, S1, T, NUM_BLOCKS, KEYS_MAX, CMP, PAGE: gl.constexpr,
                  CAUSAL: gl.constexpr, TND: gl.constexpr, HAS_ASQ: gl.constexpr,
                  LEADING_ZERO: gl.constexpr, STAGES: gl.constexpr, CTAS: gl.constexpr,
                  SUB: gl.constexpr, BLOCK_K: gl.constexpr, H: gl.constexpr,
                  FP8: gl.constexpr, HEADER: gl.constexpr):
    """One warp, for consumer SUB: its share part by part up to the E it reads, then parts
    taken from the pairs with the most left, then a stop descriptor (b = -1)."""
    if ok:
        me = gl.program_id(0) * PAIRS + SUB
        q_block, k_block, QB, b, qb, kb, lo, hi = _share(md_ptr, SUB, CTAS, HEADER)
        gl.atomic_xchg(steal_ptr + 2 * me + 1, lo * STEAL_PARTS, sem="relaxed")  # P, then E
        gl.atomic_xchg(steal_ptr + 2 * me, hi * STEAL_PARTS, sem="release")
        c = 0
        seg = 0
        cur_b = -1
        cur_qb = -1
        end = hi * STEAL_PARTS
        su = lo * STEAL_PARTS  # the part of the share's units to take next
        part_keys = k_block // STEAL_PARTS
        i = 0
        row0, s_lo, keys, run = _unit_row(asq_ptr, ask_ptr, b, qb, kb, q_block, k_block, S1,
                                          T, KEYS_MAX, CMP, CAUSAL, TND, HAS_ASQ, LEADING_ZERO)
        go = (b >= 0) & (b < B)
        while go:
            u = su // STEAL_PARTS
            while (u >= i + run) & (b < B):  # the row holding unit u
                i += run
                kb = 0
                b, qb = next_row(b, qb, QB)
                if b < B:
                    row0, s_lo, keys, run = _unit_row(asq_ptr, ask_ptr, b, qb, kb, q_block,
                                                      k_block, S1, T, KEYS_MAX, CMP, CAUSAL,
                                                      TND, HAS_ASQ, LEADING_ZERO)
            if (u >= hi) | (su >= end) | (b >= B):
                go = False
            else:
                gl.atomic_xchg(steal_ptr + 2 * me + 1, su + 1, sem="relaxed")
                end_next = gl.load(steal_ptr + 2 * me, volatile=True)  # for the next part
                j0 = (kb + u - i) * k_block + (su % STEAL_PARTS) * part_keys
                j1 = gl.minimum(j0 + part_keys, keys)
                if j0 < j1:
                    new_row = (b != cur_b) | (qb != cur_qb)
                    c, seg = _issue_part(k_desc, ks_desc, q_desc, bt_ptr, stride_bt, k_smem,
                                         ks_smem, q_smem, ready, empty, q_ready, q_empty, desc,
                                         b, qb, row0 + s_lo, j0, j1, new_row, c, seg,
                                         NUM_BLOCKS, PAGE, STAGES, SUB, BLOCK_K, H, FP8)
                    cur_b = b
                    cur_qb = qb
                end = end_next
                su += 1
        # parts of other pairs, while some pair has STEAL_MIN_LEFT or more left
        LL: gl.constexpr = gl.BlockedLayout([1], [32], [1], [0])
        lanes = gl.arange(0, 32, layout=LL)
        vs = (me + 1 + STEAL_STRIDE * lanes) % NP
        taking = NP > 1
        taken = 0
        while taking:
            left = gl.load(steal_ptr + 2 * vs, volatile=True) - \
                gl.load(steal_ptr + 2 * vs + 1, volatile=True)
            most = gl.max(left, 0)
            if most < STEAL_MIN_LEFT:
                taking = False
            else:
                v = gl.min(gl.where(left == most, vs, NP), 0)
                su = gl.atomic_add(steal_ptr + 2 * v, -1, sem="acquire") - 1
                if su >= gl.load(steal_ptr + 2 * v + 1, volatile=True):
                    tb, tqb, j0, j1 = _unit_at(md_ptr, asq_ptr, ask_ptr, v, su // STEAL_PARTS,
                                               B, S1, T, KEYS_MAX, CMP, CAUSAL, TND, HAS_ASQ,
                                               LEADING_ZERO, CTAS, HEADER)
                    j0 += (su % STEAL_PARTS) * part_keys
                    j1 = gl.minimum(j1, j0 + part_keys)
                    if (tb >= 0) & (j0 < j1):
                        new_row = (tb != cur_b) | (tqb != cur_qb)
                        q_row = 0
                        if new_row:
                            trow0, ts_lo, _, _ = _unit_row(asq_ptr, ask_ptr, tb, tqb, 0,
                                                           q_block, k_block, S1, T, KEYS_MAX,
                                                           CMP, CAUSAL, TND, HAS_ASQ,
                                                           LEADING_ZERO)
                            q_row = trow0 + ts_lo
                        c, seg = _issue_part(k_desc, ks_desc, q_desc, bt_ptr, stride_bt,
                                             k_smem, ks_smem, q_smem, ready, empty, q_ready,
                                             q_empty, desc, tb, tqb, q_row, j0, j1, new_row,
                                             c, seg, NUM_BLOCKS, PAGE, STAGES, SUB, BLOCK_K,
                                             H, FP8)
                        cur_b = tb
                        cur_qb = tqb
                        taken += 1
        gl.store(steal_ptr + 2 * NP + me, taken)  # (read by the tests only)
        # the stop: a descriptor of row -1 in the next stage, its barrier arrived on bare
        s = SUB * STAGES + c % STAGES
        mbarrier.wait(empty.index(s), ((c // STAGES) & 1) ^ 1)
        DL: gl.constexpr = gl.BlockedLayout([4], [32], [1], [0])
        desc.index(s).store(gl.full([4], -1, gl.int32, DL))
        mbarrier.arrive(ready.index(s))


@gluon.jit
def _field(d, k: gl.constexpr):
    """Word k of a descriptor read from shared memory."""
    return gl.sum(gl.where(gl.arange(0, 4, layout=d.type.layout) == k, d, 0), 0)


@gluon.jit
def _consumer_steal(w_ptr, qs_ptr, asq_ptr, ask_ptr, md_ptr, out_ptr, stride_out, k_smem,
                    ks_smem, q_smem, ready, empty, q_ready, q_empty, desc, ok, S1, T, KEYS_MAX,
                    CMP, CAUSAL: gl.constexpr, TND: gl.constexpr, HAS_ASQ: gl.constexpr,
                    LEADING_ZERO: gl.constexpr, STAGES: gl.constexpr, SUB: gl.constexpr,
                    BLOCK_K: gl.constexpr, H: gl.constexpr, D: gl.constexpr,
                    FP8: gl.constexpr, q_ptr):
    """One warpgroup, one token per sequence: the parts its loader's descriptors name, in their
    order (its own share's, then those taken from other pairs), as _consumer scores them."""
    mma: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1],
                                                  instr_shape=[16, H, 16 if FP8 else 32])
    A_F16: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=mma, k_width=2)
    zero = gl.zeros([BLOCK_K, H], gl.float32 if FP8 else gl.int32, mma)
    SL: gl.constexpr = gl.sum(gl.reshape(zero.to(gl.float32), [BLOCK_K, 1, H]),
                              axis=2).type.layout
    KEY: gl.constexpr = gl.SliceLayout(1, SL)
    TOK: gl.constexpr = gl.SliceLayout(0, SL)
    COL: gl.constexpr = gl.SliceLayout(0, mma)
    DL: gl.constexpr = gl.BlockedLayout([4], [32], [4], [0])
    if ok:
        q_block = gl.load(md_ptr + 3)
        offs_k = gl.arange(0, BLOCK_K, layout=KEY)
        rows0, vis0, qa0 = _half_tokens(w_ptr, qs_ptr, 0, 0, 0, 1, 0, 0, CMP, CAUSAL, 1, H,
                                        TOK, COL)  # (placeholders: no token is live)
        c = 0
        seg = 0
        cur_b = -1
        cur_qb = -1
        going = True
        while going:
            s = SUB * STAGES + c % STAGES
            mbarrier.wait(ready.index(s), (c // STAGES) & 1)
            d = desc.index(s).load(DL)
            b = _field(d, 0)
            if b < 0:
                going = False
            else:
                qb = _field(d, 1)
                j0 = _field(d, 2)
                j1 = _field(d, 3)
                if (b != cur_b) | (qb != cur_qb):
                    row0, s1, s2, s_lo, s_hi = _row_tokens(asq_ptr, ask_ptr, b, qb, q_block, S1,
                                                           T, TND, HAS_ASQ, LEADING_ZERO)
                    rows0, vis0, qa0 = _half_tokens(w_ptr, qs_ptr, row0, s_lo, s_hi, s1, s2,
                                                    KEYS_MAX, CMP, CAUSAL, 1, H, TOK, COL)
                    if FP8:
                        gl.thread_barrier()  # every warp's dots done with the last query
                        _query_f16(q_ptr, q_smem, row0 + s_lo, s_hi - s_lo, 1, H, D)
                    else:
                        if seg > 0:
                            mbarrier.arrive(q_empty)
                        mbarrier.wait(q_ready, seg & 1)
                    seg += 1
                    cur_b = b
                    cur_qb = qb
                q0 = q_smem.slice(0, H).permute((1, 0))
                for t in range(j0, j1, BLOCK_K):
                    s = SUB * STAGES + c % STAGES
                    k = _tile_operand(k_smem, ready, s, c // STAGES, BLOCK_K, D, FP8, A_F16)
                    x0 = warpgroup_mma(k, q0, zero, use_acc=False, is_async=True)
                    if FP8:
                        x0, k = warpgroup_mma_wait(num_outstanding=0, deps=(x0, k))
                    else:
                        x0 = warpgroup_mma_wait(num_outstanding=0, deps=(x0,))
                    ks = ks_smem.index(s).reshape([BLOCK_K]).load(KEY).to(gl.float32)
                    mbarrier.arrive(empty.index(s))
                    _store_half(out_ptr, stride_out, KEYS_MAX, rows0, vis0, t + offs_k, j0,
                                _head_sums(x0, ks, qa0, 1, H))
                    c += 1


@gluon.jit
def _indexer_logits_gluon_kernel(
        k_desc, ks_desc,  # TMA: cache [NB, PAGE, D], its scales [NB, PAGE]
        q_desc,  # int8: TMA of the query [R·H, D]; fp8: the query's pointer
        w_ptr, qs_ptr,  # [R, H], [R, H]
        bt_ptr, stride_bt, asq_ptr, ask_ptr,
        md_ptr, chk_ptr, err_ptr,  # as in _indexer_logits_kernel
        out_ptr, stride_out,
        steal_ptr, NP,  # STEAL: int32 [3·NP] (any contents before): (E, P) of the NP pairs,
        # then the parts each took from others
        B, S1, T, NUM_BLOCKS, KEYS_MAX, CMP,
        PAGE: gl.constexpr, CAUSAL: gl.constexpr, TND: gl.constexpr, HAS_ASQ: gl.constexpr,
        LEADING_ZERO: gl.constexpr, NQ: gl.constexpr, SPLIT: gl.constexpr,
        STAGES: gl.constexpr, BLOCK_K: gl.constexpr, CTAS: gl.constexpr, H: gl.constexpr,
        D: gl.constexpr, FP8: gl.constexpr, Q_LAYOUT: gl.constexpr, FORMAT_ID: gl.constexpr,
        BACKEND: gl.constexpr, HEADER: gl.constexpr, PDL: gl.constexpr,
        STEAL: gl.constexpr = False):
    if PDL:  # phase 2's first kernel may launch as this one's CTAs finish (its own wait keeps it
        # from reading the logits early): as in the Triton kernel
        gl.inline_asm_elementwise("griddepcontrol.launch_dependents; // dummy $0", "=r", [],
                                  dtype=gl.int32, is_pure=False, pack=1)
    W = gl.num_programs(0) // CTAS
    ok = header_ok(md_ptr, W, B, CMP, BLOCK_K, CAUSAL, TND, FORMAT_ID, BACKEND)
    ok = ok & header_ok(chk_ptr, W, B, CMP, BLOCK_K, CAUSAL, TND, FORMAT_ID, BACKEND)
    if gl.program_id(0) == 0:
        gl.store(err_ptr, gl.where(ok, 0, 1))
    # per consumer: a ring of STAGES key tiles and scales
    k_smem = gl.allocate_shared_memory(k_desc.dtype, [PAIRS * STAGES] + k_desc.block_type.shape,
                                       k_desc.layout)
    ks_smem = gl.allocate_shared_memory(ks_desc.dtype, [PAIRS * STAGES] + ks_desc.block_type.shape,
                                        ks_desc.layout)
    # per consumer, its stacked query block (fp8: converted to fp16 by the consumer)
    q_smem = gl.allocate_shared_memory(gl.float16 if FP8 else gl.int8, [PAIRS, NQ * H, D], Q_LAYOUT)
    if FP8 and SPLIT:  # and its two halves' head weights (fp8, four tokens)
        qa_smem = gl.allocate_shared_memory(gl.float32, [PAIRS * NQ * H],
                                            gl.SwizzledSharedLayout(1, 1, 1, [0]))
        qa_0 = qa_smem.slice(0, NQ * H)
        qa_1 = qa_smem.slice(NQ * H, NQ * H)
    else:  # (unused)
        qa_0 = q_smem
        qa_1 = q_smem
    ready = gl.allocate_shared_memory(gl.int64, [PAIRS * STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [PAIRS * STAGES, 1], mbarrier.MBarrierLayout())
    q_ready = gl.allocate_shared_memory(gl.int64, [PAIRS, 1], mbarrier.MBarrierLayout())
    q_empty = gl.allocate_shared_memory(gl.int64, [PAIRS, 1], mbarrier.MBarrierLayout())
    for s in gl.static_range(PAIRS * STAGES):
        mbarrier.init(ready.index(s), count=1)
        mbarrier.init(empty.index(s), count=1)
    for s in gl.static_range(PAIRS):
        mbarrier.init(q_ready.index(s), count=1)
        mbarrier.init(q_empty.index(s), count=1)
    SUB0: gl.constexpr = 0
    SUB1: gl.constexpr = 1
    if STEAL:
        desc = gl.allocate_shared_memory(gl.int32, [PAIRS * STAGES, 4],
                                         gl.SwizzledSharedLayout(1, 1, 1, [0]))
        gl.warp_specialize([
            (_consumer_steal, (w_ptr, qs_ptr, asq_ptr, ask_ptr, md_ptr, out_ptr, stride_out,
                               k_smem, ks_smem, q_smem.index(0), ready, empty, q_ready.index(0),
                               q_empty.index(0), desc, ok, S1, T, KEYS_MAX, CMP, CAUSAL, TND,
                               HAS_ASQ, LEADING_ZERO, STAGES, SUB0, BLOCK_K, H, D, FP8, q_desc)),
            (_consumer_steal, (w_ptr, qs_ptr, asq_ptr, ask_ptr, md_ptr, out_ptr, stride_out,
                               k_smem, ks_smem, q_smem.index(1), ready, empty, q_ready.index(1),
                               q_empty.index(1), desc, ok, S1, T, KEYS_MAX, CMP, CAUSAL, TND,
                               HAS_ASQ, LEADING_ZERO, STAGES, SUB1, BLOCK_K, H, D, FP8, q_desc)),
            (_loader_steal, (k_desc, ks_desc, q_desc, bt_ptr, stride_bt, asq_ptr, ask_ptr, md_ptr,
                             steal_ptr, NP, k_smem, ks_smem, q_smem.index(0), ready, empty,
                             q_ready.index(0), q_empty.index(0), desc, ok, B, S1, T, NUM_BLOCKS,
                             KEYS_MAX, CMP, PAGE, CAUSAL, TND, HAS_ASQ, LEADING_ZERO, STAGES, CTAS,
                             SUB0, BLOCK_K, H, FP8, HEADER)),
            (_loader_steal, (k_desc, ks_desc, q_desc, bt_ptr, stride_bt, asq_ptr, ask_ptr, md_ptr,
                             steal_ptr, NP, k_smem, ks_smem, q_smem.index(1), ready, empty,
                             q_ready.index(1), q_empty.index(1), desc, ok, B, S1, T, NUM_BLOCKS,
                             KEYS_MAX, CMP, PAGE, CAUSAL, TND, HAS_ASQ, LEADING_ZERO, STAGES, CTAS,
                             SUB1, BLOCK_K, H, FP8, HEADER)),
        ], [4, 1, 1], [CONSUMER_REGISTERS if CTAS == 1 else TWO_CTAS_CONSUMER_REGISTERS,
                       LOADER_REGISTERS, LOADER_REGISTERS])
        return
    gl.warp_specialize([
        (_consumer, (w_ptr, qs_ptr, asq_ptr, ask_ptr, md_ptr, out_ptr, stride_out, k_smem,
                     ks_smem, q_smem.index(0), ready, empty, q_ready.index(0),
                     q_empty.index(0), ok, B, S1, T, KEYS_MAX, CMP, CAUSAL, TND, HAS_ASQ,
                     LEADING_ZERO, NQ, SPLIT, STAGES, CTAS, SUB0,
                     BLOCK_K, H, D, FP8, HEADER, q_desc, qa_0)),
        (_consumer, (w_ptr, qs_ptr, asq_ptr, ask_ptr, md_ptr, out_ptr, stride_out, k_smem,
                     ks_smem, q_smem.index(1), ready, empty, q_ready.index(1),
                     q_empty.index(1), ok, B, S1, T, KEYS_MAX, CMP, CAUSAL, TND, HAS_ASQ,
                     LEADING_ZERO, NQ, SPLIT, STAGES, CTAS, SUB1,
                     BLOCK_K, H, D, FP8, HEADER, q_desc, qa_1)),
        (_loader, (k_desc, ks_desc, q_desc, bt_ptr, stride_bt, asq_ptr, ask_ptr, md_ptr, k_smem,
                   ks_smem, q_smem.index(0), ready, empty, q_ready.index(0), q_empty.index(0),
                   ok, B, S1, T, NUM_BLOCKS, KEYS_MAX, CMP, PAGE, CAUSAL, TND, HAS_ASQ,
                   LEADING_ZERO, STAGES, CTAS, SUB0,
                   BLOCK_K, H, FP8, HEADER)),
        (_loader, (k_desc, ks_desc, q_desc, bt_ptr, stride_bt, asq_ptr, ask_ptr, md_ptr, k_smem,
                   ks_smem, q_smem.index(1), ready, empty, q_ready.index(1), q_empty.index(1),
                   ok, B, S1, T, NUM_BLOCKS, KEYS_MAX, CMP, PAGE, CAUSAL, TND, HAS_ASQ,
                   LEADING_ZERO, STAGES, CTAS, SUB1,
                   BLOCK_K, H, FP8, HEADER)),
    ], [4, 1, 1], [CONSUMER_REGISTERS if CTAS == 1 else TWO_CTAS_CONSUMER_REGISTERS,
                   LOADER_REGISTERS, LOADER_REGISTERS])
