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
from triton.experimental.gluon.language.nvidia.hopper import mbarrier
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

from .indexer_logits import header_ok
from .indexer_logits_gluon_pairs import PAIRS, _consumer, _loader
from .indexer_logits_gluon_steal import _consumer_steal, _loader_steal
from .launch import launch, tma_aligned

# one CTA per SM: two consumer warpgroups (each up to two 64 x 128 accumulators and the
# epilogue) and two loader warps (scalars only), within the SM's 64K registers
CONSUMER_REGISTERS = gl.constexpr(232)
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
    # the ReLU's saturating multiply is exact for dots of at most 128 products (`_relu_times`)
    gl.static_assert(D <= 128, "head dim D must be at most 128")
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
