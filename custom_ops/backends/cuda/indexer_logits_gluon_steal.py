"""Work sharing for the Gluon logits kernel's pairs (`indexer_logits_gluon`, STEAL): a loader
that, done with its own share, takes parts of other pairs' shares, and a consumer that scores
whatever parts its loader's descriptors name."""
from __future__ import annotations

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import mbarrier, tma, warpgroup_mma

from .configs import K_BLOCK
from .indexer_logits import _head_sums, next_row, row_units, worker_share
from .indexer_logits_gluon_pairs import (PAIRS, _copy_tile, _half_tokens, _query_f16, _row_tokens,
                                         _share, _store_half, _tile_done, _tile_operand)


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
                                        TOK, COL, FP8)  # (placeholders: no token is live)
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
                                                    KEYS_MAX, CMP, CAUSAL, 1, H, TOK, COL, FP8)
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
                    x0, _, ks = _tile_done(x0, x0, k, ks_smem, empty, s, FP8, False, BLOCK_K, KEY)
                    _store_half(out_ptr, stride_out, KEYS_MAX, rows0, vis0, t + offs_k, j0,
                                _head_sums(x0, ks, qa0, 1, H))
                    c += 1
