"""The Gluon logits kernel's loader/consumer pairs (`indexer_logits_gluon`): each pair walks its
contiguous share of a metadata worker's key tiles; the loader warp copies every tile, its scales
and (int8) the stacked query by TMA into the pair's ring of stages, the consumer warpgroup runs
the dots and the epilogue and stores each score from the accumulator's registers."""
from __future__ import annotations

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (fence_async_shared, mbarrier, tma,
                                                              warpgroup_mma, warpgroup_mma_wait)

from .indexer_logits import (_head_sums, _store_scores, batch_rows, dot_order, next_row,
                             relu_weights, row_units, tile_range, visible_keys, worker_share)

PAIRS = gl.constexpr(2)  # consumer/loader pairs per CTA (the kernel's warp_specialize list)


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
                 NH: gl.constexpr, H: gl.constexpr, TOK: gl.constexpr, COL: gl.constexpr,
                 FP8: gl.constexpr):
    """Tokens [g, g + NH): output rows and visible keys (0 for tokens past s_hi) in layout TOK,
    and their head weights weights·qscale [NH·H] (0 for those tokens; scaled by
    `relu_weights`) in layout COL."""
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
    return rows, vis, relu_weights(qa, FP8)


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
def _tile_done(x0, x1, k, ks_smem, empty, s, FP8: gl.constexpr, SPLIT: gl.constexpr,
               BLOCK_K: gl.constexpr, KEY: gl.constexpr):
    """A consumer's end of the key tile in stage s: its dots waited for (x1 too with SPLIT; an
    fp8 tile's A operand k is registers the dots read until they are done), its key scales read
    and its stage freed for the loader. Returns the accumulators and the scales. (An int8 split
    tile waits for each half apart in the consumer instead.)"""
    gl.static_assert(FP8 or not SPLIT, "an int8 split tile ends in the consumer")
    if FP8:
        if SPLIT:
            x0, x1, k = warpgroup_mma_wait(num_outstanding=0, deps=(x0, x1, k))
        else:
            x0, k = warpgroup_mma_wait(num_outstanding=0, deps=(x0, k))
    else:
        x0 = warpgroup_mma_wait(num_outstanding=0, deps=(x0,))
    ks = ks_smem.index(s).reshape([BLOCK_K]).load(KEY).to(gl.float32)
    mbarrier.arrive(empty.index(s))
    return x0, x1, ks


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
                                                CAUSAL, NH, H, TOK, COL, FP8)
                if SPLIT:
                    rows1, vis1, qa1 = _half_tokens(w_ptr, qs_ptr, row0, s_lo + NH, s_hi, s1, s2,
                                                    j1, CMP, CAUSAL, NH, H, TOK, COL, FP8)
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
                    if not SPLIT:
                        x1 = x0  # (unused)
                    j = t + offs_k
                    if SPLIT and not FP8:
                        # the first half's epilogue under the second half's dot: distinct
                        # accumulators, and both dots read the keys from shared memory
                        x0 = warpgroup_mma_wait(num_outstanding=1, deps=(x0,))
                        ks = ks_smem.index(s).reshape([BLOCK_K]).load(KEY).to(gl.float32)
                        _store_half(out_ptr, stride_out, KEYS_MAX, rows0, vis0, j, j0,
                                    _head_sums(x0, ks, qa0, NH, H))
                        x1 = warpgroup_mma_wait(num_outstanding=0, deps=(x1,))
                        mbarrier.arrive(empty.index(s))
                        _store_half(out_ptr, stride_out, KEYS_MAX, rows1, vis1, j, j0,
                                    _head_sums(x1, ks, qa1, NH, H))
                    else:
                        x0, x1, ks = _tile_done(x0, x1, k, ks_smem, empty, s, FP8, SPLIT,
                                                BLOCK_K, KEY)
                        if QA_SMEM:  # (SPLIT here means fp8, whose weights wait in smem)
                            a0 = qa_smem.slice(0, NH * H).load(COL)
                            a1 = qa_smem.slice(NH * H, NH * H).load(COL)
                        else:
                            a0 = qa0
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
