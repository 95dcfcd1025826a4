"""Phase 1 of the CUDA indexer: per-(query token, key) scores written to an fp32 workspace.

    logits[r, j] = kscale[j] · Σ_g (weights[r, g] · qscale[r, g]) · ReLU(q[r, g] · k[j])

(scales are non-negative, so both factor out of the ReLU: SPEC §1.4). A persistent grid of
W · P programs walks the metadata's work units (b, qb, kb): worker w's contiguous run of units
is cut into P contiguous shares, so more than one program per SM keeps loads in flight while the
schedule stays the metadata's, and each share's keys of one row form one pipelined loop. In
decode each [BLOCK_K, D] key tile is loaded once, through the block table, and dotted against
every query token of the sequence (next_n of them), so the key cache is read from HBM once per
sequence per call; in prefill a unit's tiles are streamed once per group of stacked tokens, the
groups after the first reading them from L2. Logits beyond a token's visible length are never
written, and phase 2 never uses them. Each row also gets every SAMPLE_EVERY-th score a second
time, side by side after its KEYS_MAX logits: phase 2's threshold reads its sample there as
consecutive words instead of one 32-byte sector per sampled score.

A metadata header that does not describe this call (format, backend, worker count, tile sizes,
batch, mask) makes every program skip all work; program 0 stores the verdict in `err`, which
phase 2 reads to emit all -1 rows instead of reading a workspace nobody wrote.
"""
from __future__ import annotations

import triton
import triton.language as tl

from . import configs as _configs
from .configs import SAMPLE_EVERY as _SAMPLE_EVERY

# scores j with j % SAMPLE_EVERY == 0 are also written at column KEYS_MAX + j // SAMPLE_EVERY
SAMPLE_EVERY = tl.constexpr(_SAMPLE_EVERY)
assert _SAMPLE_EVERY & (_SAMPLE_EVERY - 1) == 0, "SAMPLE_EVERY must be a power of two"
SAMPLE_SHIFT = tl.constexpr(_SAMPLE_EVERY.bit_length() - 1)
# ReLU by a saturating multiply (`_relu_times`): PTX wherever the kernels are compiled, its
# arithmetic spelled out in Triton's interpreter (which runs no inline assembly)
RELU_BY_ASM = tl.constexpr(not triton.knobs.runtime.interpret)
RELU_ASM_INT8 = tl.constexpr(_configs.relu_asm("int8"))
RELU_ASM_FP8 = tl.constexpr(_configs.relu_asm("fp8"))
RELU_INPUT_INT8 = tl.constexpr(_configs.RELU_INPUT_SCALE["int8"])
RELU_INPUT_FP8 = tl.constexpr(_configs.RELU_INPUT_SCALE["fp8"])
RELU_WEIGHT_INT8 = tl.constexpr(_configs.RELU_WEIGHT_SCALE["int8"])
RELU_WEIGHT_FP8 = tl.constexpr(_configs.RELU_WEIGHT_SCALE["fp8"])


@triton.jit
def visible_keys(s, s1, s2, CMP, CAUSAL: tl.constexpr):
    """SPEC §1.3: compressed keys query token s (of s1) sees; clamped at 0 (C-style division
    differs from floor only for negative numerators, which the clamp maps to 0 either way)."""
    s2c = s2 // CMP
    if CAUSAL:
        s2c = tl.minimum(s2c, (s2 - s1 + s + 1) // CMP)
    return tl.maximum(s2c, 0)


@triton.jit
def batch_rows(asq_ptr, b, S1, T, HAS_ASQ: tl.constexpr, TND: tl.constexpr,
               LEADING_ZERO: tl.constexpr):
    """(first output row, query tokens S1_b) of batch b (SPEC §1.2), clamped to the query shape."""
    if TND:
        if LEADING_ZERO:
            start = tl.load(asq_ptr + b)
            end = tl.load(asq_ptr + b + 1)
        else:
            end = tl.load(asq_ptr + b)
            start = tl.load(asq_ptr + b - 1, mask=b > 0, other=0)
        end = tl.minimum(tl.maximum(end, 0), T)
        start = tl.minimum(tl.maximum(start, 0), end)
        return start, end - start
    if HAS_ASQ:
        n = tl.minimum(tl.maximum(tl.load(asq_ptr + b), 0), S1)
    else:
        n = S1
    return b * S1, n


@triton.jit
def worker_share(md_ptr, worker, sub, P: tl.constexpr, HEADER: tl.constexpr,
                 BLOCK_K: tl.constexpr = 0):
    """The schedule's q_block, k_block and query blocks per sequence QB, worker `worker`'s first
    unit (b, qb, kb), and the contiguous share [lo, hi) of its units that is program `sub`'s
    (of P): within one row they are consecutive key blocks, so each row's keys form one loop.
    BLOCK_K > 0: lo and hi count key tiles of BLOCK_K keys (k_block // BLOCK_K a unit), so
    shares differ by at most one tile, not one unit (tile_range walks such a share)."""
    q_block = tl.load(md_ptr + 3)
    k_block = tl.load(md_ptr + 4)
    QB = tl.load(md_ptr + 7)
    rec = md_ptr + HEADER + 4 * worker
    b = tl.load(rec)
    qb = tl.minimum(tl.maximum(tl.load(rec + 1), 0), QB - 1)
    kb = tl.maximum(tl.load(rec + 2), 0)
    count = tl.load(rec + 3)
    if BLOCK_K > 0:
        count = count * (k_block // BLOCK_K)
    return q_block, k_block, QB, b, qb, kb, sub * count // P, (sub + 1) * count // P


@triton.jit
def row_units(s1, s2, s_lo, s_hi, kb, k_block, KEYS_MAX, CMP, CAUSAL: tl.constexpr):
    """For the query tokens [s_lo, s_hi) of s1 of a row (against s2 keys), from key block kb
    on: the row's keys (those its last token sees) and its units (key blocks) from kb on."""
    keys = tl.minimum(visible_keys(s_hi - 1, s1, s2, CMP, CAUSAL), KEYS_MAX)
    units = tl.where(s_hi > s_lo, tl.cdiv(keys, k_block), 0)
    return keys, tl.maximum(units - kb, 0)


@triton.jit
def tile_range(units, kb, i, lo, hi, k_block, keys, BLOCK_K: tl.constexpr):
    """A row's `units` units from key block kb on, at position i of a worker's range counted in
    key tiles (BLOCK_K keys): the keys [j0, j1) of it in the share [lo, hi) of that range
    (j1 == j0: none) and its tiles (how far i moves on; the last unit counts whole, its tiles
    past `keys` empty)."""
    f = k_block // BLOCK_K
    run = units * f
    a = tl.maximum(i, lo)
    e = tl.minimum(i + run, hi)
    j0 = (kb * f + a - i) * BLOCK_K
    return j0, tl.where(a < e, tl.minimum((kb * f + e - i) * BLOCK_K, keys), j0), run


@triton.jit
def next_row(b, qb, QB):
    """The unit row after (b, qb): the next query block, or the next sequence's first."""
    qb += 1
    if qb >= QB:
        qb = 0
        b += 1
    return b, qb


@triton.jit
def header_ok(md_ptr, W, B, CMP, BLOCK_K: tl.constexpr, CAUSAL: tl.constexpr,
              TND: tl.constexpr, FORMAT_ID: tl.constexpr, BACKEND: tl.constexpr):
    """Whether the metadata describes this call: format v1, CUDA, W workers, tiles it can run."""
    q_block = tl.load(md_ptr + 3)
    k_block = tl.load(md_ptr + 4)
    ok = (tl.load(md_ptr + 0) == FORMAT_ID) & (tl.load(md_ptr + 1) == BACKEND)
    ok = ok & (tl.load(md_ptr + 2) == W) & (tl.load(md_ptr + 5) == B)
    ok = ok & (k_block > 0) & (k_block % BLOCK_K == 0) & (q_block >= 0)
    ok = ok & (tl.load(md_ptr + 7) >= 1) & (tl.load(md_ptr + 10) == CMP)
    ok = ok & (tl.load(md_ptr + 9) == (3 if CAUSAL else 0)) & (tl.load(md_ptr + 11) == (1 if TND else 0))
    return ok


@triton.jit
def _indexer_header_gate_kernel(chk_ptr, md_ptr, W, B, CMP, BLOCK_K: tl.constexpr,
                                CAUSAL: tl.constexpr, TND: tl.constexpr,
                                FORMAT_ID: tl.constexpr, BACKEND: tl.constexpr):
    """One program: unless the caller's metadata chk_ptr describes the whole call, make the
    schedule md_ptr of one of its chunks unusable (format id -1), so that the chunk's phase 1
    skips every unit and its phase 2 writes -1 rows, as the call in one launch would."""
    ok = header_ok(chk_ptr, W, B, CMP, BLOCK_K, CAUSAL, TND, FORMAT_ID, BACKEND)
    tl.store(md_ptr, tl.full([], -1, tl.int32), mask=ok == 0)


@triton.jit
def dot_order(x):
    """An fp8-as-fp16 dot operand [N, 128] with its K axis reordered: column 16s + 8h + 2c + e
    takes column 32c + 4s + 2h + e. A dot is a sum over K, so keys and queries reordered alike
    give the same products. Why: in a wgmma A operand a thread holds the K columns 2c + {0, 1,
    8, 9} of every 16, c its lane % 4; after the reorder those are the 32 consecutive bytes
    [32c, 32c + 32) of an fp8 key row, read from shared memory as two 16-byte loads instead of
    sixteen 2-byte ones (session 25: 261 -> 233 instructions per tile at next_n=1)."""
    n: tl.constexpr = x.shape[0]
    return x.reshape([n, 4, 8, 2, 2]).permute(0, 2, 3, 1, 4).reshape([n, 128])


@triton.jit
def _load_tile(k_ptr, stride_kb, ks_ptr, stride_ksb, bt_row, t, j1, NUM_BLOCKS,
               PAGE: tl.constexpr, FP8_AS_F16: tl.constexpr, CONTIG: tl.constexpr,
               TMA: tl.constexpr, KS_PAIRS: tl.constexpr, BLOCK_K: tl.constexpr,
               D: tl.constexpr):
    """Key tile [BLOCK_K, D] of compressed keys [t, t + BLOCK_K) and its scales, through the
    block table (PAGE is a compile-time constant: no integer division per key).

    CONTIG (PAGE % BLOCK_K == 0): the tile lies in one page, so one block-table read serves it
    and the tile is one contiguous run of the cache, read whole: rows past j1 are read too (in
    bounds, within the page) and only feed their own scores, which are never stored. TMA: k_ptr
    is a tensor descriptor over the cache as [NB, PAGE, D] and the tile is one bulk copy.
    KS_PAIRS: 2-byte key scales are read as int32 pairs, because 4-byte loads can be pipelined
    as asynchronous copies and 2-byte ones cannot (their latency then stalls every tile).
    Otherwise (a tile straddles pages) each key row looks up its own page."""
    offs = tl.arange(0, BLOCK_K)
    if CONTIG:
        page = tl.load(bt_row + t // PAGE)
        page = tl.minimum(tl.maximum(page, 0), NUM_BLOCKS - 1).to(tl.int64)  # never out of the cache
        slot0 = t % PAGE
        if TMA:
            k = tl.reshape(k_ptr.load([page.to(tl.int32), slot0, 0]), [BLOCK_K, D])
        else:
            k = tl.load(k_ptr + (page * stride_kb + slot0 * D) + (offs * D)[:, None]
                        + tl.arange(0, D)[None, :])
        ks_row = ks_ptr + page * stride_ksb + slot0
        if KS_PAIRS:
            x = tl.load(ks_row.to(tl.pointer_type(tl.int32)) + tl.arange(0, BLOCK_K // 2))
            lo = (x & 0xFFFF).to(tl.int16).to(ks_ptr.dtype.element_ty, bitcast=True)
            hi = (x >> 16).to(tl.int16).to(ks_ptr.dtype.element_ty, bitcast=True)
            ks = tl.reshape(tl.join(lo, hi), [BLOCK_K]).to(tl.float32)
        else:
            ks = tl.load(ks_row + offs).to(tl.float32)
    else:
        j = t + offs
        jm = j < j1
        page = tl.load(bt_row + j // PAGE, mask=jm, other=0)
        page = tl.minimum(tl.maximum(page, 0), NUM_BLOCKS - 1).to(tl.int64)
        slot = j % PAGE
        # rows past j1 stay unloaded: each key row only feeds its own score, which is not stored
        k = tl.load(k_ptr + (page * stride_kb + slot * D)[:, None] + tl.arange(0, D)[None, :],
                    mask=jm[:, None])
        ks = tl.load(ks_ptr + page * stride_ksb + slot, mask=jm, other=0).to(tl.float32)
    if FP8_AS_F16:
        k = dot_order(k).to(tl.float16)
    return k, ks


@triton.jit
def _load_query(q_ptr, w_ptr, qs_ptr, row, FP8_AS_F16: tl.constexpr, H: tl.constexpr,
                D: tl.constexpr):
    """Query row [H, D] and its head weights weights·qscale [H] (float32, exact for fp16; scaled
    by `relu_weights`)."""
    offs_h = tl.arange(0, H)
    q = tl.load(q_ptr + row * (H * D) + offs_h[:, None] * D + tl.arange(0, D)[None, :])
    a = tl.load(w_ptr + row * H + offs_h).to(tl.float32) * tl.load(qs_ptr + row * H + offs_h).to(tl.float32)
    a = relu_weights(a, q.dtype != tl.int8)
    if FP8_AS_F16:
        q = dot_order(q.to(tl.float16))  # as the keys it meets
    return q, a


@triton.jit
def _dot(k, q):
    """k · qᵀ, exact (int8: int32, |dot| <= 2^21; fp8 as fp16: fp32 accumulation)."""
    if k.dtype == tl.int8:
        return tl.dot(k, tl.trans(q), out_dtype=tl.int32)
    return tl.dot(k, tl.trans(q), out_dtype=tl.float32)


@triton.jit
def relu_weights(a, FP8: tl.constexpr):
    """Head weights a = weights · qscale (float32) as `_relu_times` takes them: times
    configs.RELU_WEIGHT_SCALE (2^22 for int8 dots, 2^25 for fp8 ones). Exact (a power of two)
    unless |a| >= 2^103, far beyond any dequantisation scale times head weight."""
    if FP8:
        return a * RELU_WEIGHT_FP8
    else:
        return a * RELU_WEIGHT_INT8


@triton.jit
def _relu_times(x, a):
    """ReLU(x) · a for the dots x and head weights a from `relu_weights`, with the bits of
    `maximum(x, 0) · weights · qscale`, in two FMA-pipe instructions a score on the GPU: one
    saturating multiply (no flush to zero) of the int8 dot's bits or the fp8 dot, whose
    arithmetic configs.RELU_INPUT_SCALE explains, then the product with the weight. Why: FMNMX
    and I2FP ran on the SMs' half-rate integer pipe, which bounded the int8 epilogue. (Triton's
    interpreter runs no inline assembly: there the same multiply and clamp are spelled out, so
    the CPU checks run this arithmetic, weights included.)"""
    if RELU_BY_ASM:
        if x.dtype == tl.int32:
            r = tl.inline_asm_elementwise(RELU_ASM_INT8, "=r,r", [x], dtype=tl.float32,
                                          is_pure=True, pack=1)
        else:
            r = tl.inline_asm_elementwise(RELU_ASM_FP8, "=r,r", [x], dtype=tl.float32,
                                          is_pure=True, pack=1)
    else:
        if x.dtype == tl.int32:
            r = x.to(tl.float32, bitcast=True) * RELU_INPUT_INT8
        else:
            r = x * RELU_INPUT_FP8
        r = tl.where(r > 0.0, tl.minimum(r, 1.0), 0.0)  # mul.sat: [0, 1], NaN to +0
    return r * a


@triton.jit
def _head_sum(x, ks, a):
    """kscale · Σ_g a[g] · ReLU(x[:, g]) for the dots x [BLOCK_K, H] of one token: [BLOCK_K]."""
    # + 0.0 turns a -0.0 score into +0.0 (they must sort alike) in the same FFMA as the scale,
    # bit-identical otherwise: the product is rounded once either way
    return tl.sum(_relu_times(x, a[None, :]), axis=1) * ks + 0.0


@triton.jit
def _head_sums(x, ks, a, NQ: tl.constexpr, H: tl.constexpr):
    """[BLOCK_K, NQ] scores from the dots x [BLOCK_K, NQ·H] of NQ stacked tokens."""
    w = _relu_times(x, a[None, :])
    return tl.sum(tl.reshape(w, [w.shape[0], NQ, H]), axis=2) * ks[:, None] + 0.0  # as above


@triton.jit
def _last_tile(j0, j1, BLOCK_K: tl.constexpr):
    """First key of the last tile of [j0, j1); j0 - BLOCK_K (nothing) when the range is empty."""
    return j0 + (tl.maximum(tl.cdiv(j1 - j0, BLOCK_K), 0) - 1) * BLOCK_K


@triton.jit
def _store_scores(row_ptr, samp_col, j, score, mask):
    """Scores at keys j of rows starting at row_ptr, and the sampled ones again at samp_col."""
    tl.store(row_ptr + j, score, mask=mask)
    # every key stored is >= 0 (a rotated epilogue's zero tile below the first key is masked
    # off): a shift and a bit test, not the signed division's rounding fix-up (2-4 instructions
    # fewer a key tile in every logits loop)
    tl.store(row_ptr + samp_col + (j >> SAMPLE_SHIFT), score,
             mask=mask & ((j & (SAMPLE_EVERY - 1)) == 0))


@triton.jit
def _store_tokens(out_ptr, stride_out, samp_col, rows, vis, lo, t, x, ks, a, NQ: tl.constexpr,
                  H: tl.constexpr, BLOCK_K: tl.constexpr):
    """Store the scores of the tile of keys [t, t + BLOCK_K) (dots x, scales ks) for the NQ
    stacked tokens `rows`, each up to its visible length `vis`, keys below `lo` left out."""
    j = t + tl.arange(0, BLOCK_K)
    _store_scores(out_ptr + rows[None, :] * stride_out, samp_col, j[:, None],
                  _head_sums(x, ks, a, NQ, H), (j[:, None] >= lo) & (j[:, None] < vis[None, :]))


@triton.jit
def _tokens(row0, g, s_hi, s1, s2, j1, CMP, CAUSAL: tl.constexpr, NQ: tl.constexpr):
    """Query tokens [g, g + NQ): whether each exists (below s_hi), its output row, and how many
    keys of [.., j1) it sees (0 for tokens that do not exist)."""
    tok = tl.arange(0, NQ)
    live = g + tok < s_hi
    vis = tl.where(live, tl.minimum(visible_keys(g + tok, s1, s2, CMP, CAUSAL), j1), 0)
    return live, (row0 + g + tok).to(tl.int64), vis


@triton.jit
def _stacked_query(q_ptr, w_ptr, qs_ptr, rows, live, first, FP8_AS_F16: tl.constexpr,
                   NQ: tl.constexpr, H: tl.constexpr, D: tl.constexpr):
    """Query rows `rows` [NQ] stacked as one [NQ·H, D] operand and their head weights
    weights·qscale [NQ·H] (scaled by `relu_weights`). Tokens not `live` read row `first` (a
    live one: in bounds, finite) and get zero head weights; their scores are never stored."""
    qrow = tl.where(live, rows, first)
    qh = (qrow[:, None] * H + tl.arange(0, H)[None, :]).reshape([NQ * H])
    q = tl.load(q_ptr + qh[:, None] * D + tl.arange(0, D)[None, :])
    qm = (live[:, None] & (tl.arange(0, H) >= 0)[None, :]).reshape([NQ * H])
    qa = tl.where(qm, tl.load(w_ptr + qh).to(tl.float32) * tl.load(qs_ptr + qh).to(tl.float32),
                  0.0)
    qa = relu_weights(qa, q.dtype != tl.int8)
    if FP8_AS_F16:
        q = dot_order(q.to(tl.float16))  # as the keys it meets
    return q, qa


@triton.jit
def _stacked_tokens(q_ptr, w_ptr, qs_ptr, k_ptr, stride_kb, ks_ptr, stride_ksb, bt_row, out_ptr,
                    stride_out, samp_col, row0, g, s_hi, s1, s2, j0, j1, NUM_BLOCKS, CMP,
                    PAGE: tl.constexpr, CAUSAL: tl.constexpr, FP8_AS_F16: tl.constexpr,
                    CONTIG: tl.constexpr, TMA: tl.constexpr, KS_PAIRS: tl.constexpr,
                    SPLIT: tl.constexpr, ROTATE: tl.constexpr, NUM_STAGES: tl.constexpr,
                    NQ: tl.constexpr, BLOCK_K: tl.constexpr, H: tl.constexpr, D: tl.constexpr):
    """Logits of query tokens [g, min(g + NQ, s_hi)) against compressed keys [j0, j1): the
    tokens are stacked into one [NQ·H, D] query loaded once, each key tile is one dot against
    all of them, and each token's scores are stored up to its own visible length.

    SPLIT: the tokens as two stacked halves, both halves' dots issued before either epilogue,
    so the second half's MMA can run while the first half's epilogue is computed (one dot of
    NQ·H columns leaves the tensor cores idle during the whole epilogue). ROTATE: the epilogue
    of the tile's dots (with SPLIT, of its second half's) is deferred to the next tile, after
    that tile's (first) dot is issued, so every epilogue has a dot in flight under it."""
    first = (row0 + g).to(tl.int64)  # a live token's row: what dead tokens' queries read
    if SPLIT:
        NH: tl.constexpr = NQ // 2
        live0, rows0, vis0 = _tokens(row0, g, s_hi, s1, s2, j1, CMP, CAUSAL, NH)
        live1, rows1, vis1 = _tokens(row0, g + NH, s_hi, s1, s2, j1, CMP, CAUSAL, NH)
        q0, qa0 = _stacked_query(q_ptr, w_ptr, qs_ptr, rows0, live0, first, FP8_AS_F16, NH, H, D)
        q1, qa1 = _stacked_query(q_ptr, w_ptr, qs_ptr, rows1, live1, first, FP8_AS_F16, NH, H, D)
        # x1, ks1: with ROTATE, the previous tile's (t - BLOCK_K) second-half dots and scales
        # (before the first tile: zeros for keys below j0, never stored). The loop must not
        # carry t itself: Triton does not pipeline a loop that yields its induction variable
        x1 = tl.zeros([BLOCK_K, NH * H], tl.int32 if q1.dtype == tl.int8 else tl.float32)
        ks1 = tl.zeros([BLOCK_K], tl.float32)
        for t in tl.range(j0, j1, BLOCK_K, num_stages=NUM_STAGES):
            k, ks = _load_tile(k_ptr, stride_kb, ks_ptr, stride_ksb, bt_row, t, j1, NUM_BLOCKS,
                               PAGE, FP8_AS_F16, CONTIG, TMA, KS_PAIRS, BLOCK_K, D)
            x0 = _dot(k, q0)
            if ROTATE:
                _store_tokens(out_ptr, stride_out, samp_col, rows1, vis1, j0, t - BLOCK_K, x1,
                              ks1, qa1, NH, H, BLOCK_K)
            x1 = _dot(k, q1)
            _store_tokens(out_ptr, stride_out, samp_col, rows0, vis0, j0, t, x0, ks, qa0, NH, H,
                          BLOCK_K)
            if not ROTATE:
                _store_tokens(out_ptr, stride_out, samp_col, rows1, vis1, j0, t, x1, ks, qa1, NH,
                              H, BLOCK_K)
            ks1 = ks
        if ROTATE:
            _store_tokens(out_ptr, stride_out, samp_col, rows1, vis1, j0,
                          _last_tile(j0, j1, BLOCK_K), x1, ks1, qa1, NH, H, BLOCK_K)
    else:
        live, rows, vis = _tokens(row0, g, s_hi, s1, s2, j1, CMP, CAUSAL, NQ)
        q, qa = _stacked_query(q_ptr, w_ptr, qs_ptr, rows, live, first, FP8_AS_F16, NQ, H, D)
        # ROTATE: the previous tile's dots, as above
        xp = tl.zeros([BLOCK_K, NQ * H], tl.int32 if q.dtype == tl.int8 else tl.float32)
        ksp = tl.zeros([BLOCK_K], tl.float32)
        for t in tl.range(j0, j1, BLOCK_K, num_stages=NUM_STAGES):
            k, ks = _load_tile(k_ptr, stride_kb, ks_ptr, stride_ksb, bt_row, t, j1, NUM_BLOCKS,
                               PAGE, FP8_AS_F16, CONTIG, TMA, KS_PAIRS, BLOCK_K, D)
            x = _dot(k, q)
            if ROTATE:
                _store_tokens(out_ptr, stride_out, samp_col, rows, vis, j0, t - BLOCK_K, xp, ksp,
                              qa, NQ, H, BLOCK_K)
            else:
                _store_tokens(out_ptr, stride_out, samp_col, rows, vis, j0, t, x, ks, qa, NQ, H,
                              BLOCK_K)
            xp = x
            ksp = ks
        if ROTATE:
            _store_tokens(out_ptr, stride_out, samp_col, rows, vis, j0,
                          _last_tile(j0, j1, BLOCK_K), xp, ksp, qa, NQ, H, BLOCK_K)


@triton.jit
def _indexer_logits_kernel(
        q_ptr, w_ptr, qs_ptr,  # [R, H, D] int8/fp8, [R, H], [R, H] fp16/fp32
        k_ptr, stride_kb,  # key [NB, PAGE, 1, D], or its TMA descriptor as [NB, PAGE, D]
        ks_ptr, stride_ksb,  # key scale [NB, PAGE, 1]
        bt_ptr, stride_bt,  # block table [B, MB] int32
        asq_ptr, ask_ptr,  # [B] / [B+1] int32, [B] int32
        md_ptr, chk_ptr, err_ptr,  # metadata (the schedule), metadata to check as well (the
        # caller's, where md_ptr is a key window's own; else md_ptr), int32 [1024] each; verdict [1]
        out_ptr, stride_out,  # fp32 [R, KEYS_MAX logits, then the row's sample]
        B, S1, T, NUM_BLOCKS, KEYS_MAX, CMP,  # KEYS_MAX: keys a logits row holds
        PAGE: tl.constexpr, CAUSAL: tl.constexpr, TND: tl.constexpr,
        HAS_ASQ: tl.constexpr, LEADING_ZERO: tl.constexpr, FP8_AS_F16: tl.constexpr,
        MODE: tl.constexpr, NQ: tl.constexpr, CONTIG: tl.constexpr, TMA: tl.constexpr,
        KS_PAIRS: tl.constexpr, SPLIT: tl.constexpr, ROTATE: tl.constexpr,
        NUM_STAGES: tl.constexpr, BLOCK_K: tl.constexpr, P: tl.constexpr,
        H: tl.constexpr, D: tl.constexpr,
        FORMAT_ID: tl.constexpr, BACKEND: tl.constexpr, HEADER: tl.constexpr,
        PDL: tl.constexpr):
    # the ReLU's saturating multiply is exact for dots of at most 128 products (`_relu_times`)
    tl.static_assert(D <= 128, "head dim D must be at most 128")
    if PDL:  # phase 2's first kernel may launch as this one's programs finish (its own wait
        tl.extra.cuda.gdc_launch_dependents()  # keeps it from reading the logits early)
    pid = tl.program_id(0)
    W = tl.num_programs(0) // P
    worker = pid // P
    sub = pid % P
    ok = header_ok(md_ptr, W, B, CMP, BLOCK_K, CAUSAL, TND, FORMAT_ID, BACKEND)
    ok = ok & header_ok(chk_ptr, W, B, CMP, BLOCK_K, CAUSAL, TND, FORMAT_ID, BACKEND)
    if pid == 0:
        tl.store(err_ptr, tl.where(ok, 0, 1))
    if ok:
        # each program a contiguous share of its worker's key tiles, not of its units (whose
        # shares differ by a whole unit), as the Gluon kernel's pairs take theirs (same-call
        # A/B, H200, session 28: fp8 B64 64K n4 488.0 -> 475.5 µs, B64 16K n1 73.9 -> 72.1,
        # prefill 4096 at 8K 1717 -> 1628; prefill at 32K 4037 -> 4090, int8 prefill ±0.2 %)
        q_block, k_block, QB, b, qb, kb, lo, hi = worker_share(md_ptr, worker, sub, P, HEADER,
                                                               BLOCK_K)
        offs_k = tl.arange(0, BLOCK_K)
        i = 0
        while (i < hi) & (b >= 0) & (b < B):
            row0, s1 = batch_rows(asq_ptr, b, S1, T, HAS_ASQ, TND, LEADING_ZERO)
            s2 = tl.load(ask_ptr + b)
            if q_block > 0:
                s_lo = qb * q_block
                s_hi = tl.minimum(s_lo + q_block, s1)
            else:
                s_lo = 0
                s_hi = s1
            keys, units = row_units(s1, s2, s_lo, s_hi, kb, k_block, KEYS_MAX, CMP, CAUSAL)
            j0, j1, run = tile_range(units, kb, i, lo, hi, k_block, keys, BLOCK_K)
            if j0 < j1:
                bt_row = bt_ptr + b.to(tl.int64) * stride_bt
                if MODE == 1:
                    # one query token per unit (decode, next_n = 1): the query is loaded once
                    row = (row0 + s_lo).to(tl.int64)
                    q, qa = _load_query(q_ptr, w_ptr, qs_ptr, row, FP8_AS_F16, H, D)
                    # ROTATE: each tile's epilogue runs under the next tile's dot (xp, ksp: the
                    # previous tile's dots and scales, as in _stacked_tokens)
                    xp = tl.zeros([BLOCK_K, H], tl.int32 if q.dtype == tl.int8 else tl.float32)
                    ksp = tl.zeros([BLOCK_K], tl.float32)
                    for t in tl.range(j0, j1, BLOCK_K, num_stages=NUM_STAGES):
                        k, ks = _load_tile(k_ptr, stride_kb, ks_ptr, stride_ksb, bt_row, t, j1,
                                           NUM_BLOCKS, PAGE, FP8_AS_F16, CONTIG, TMA, KS_PAIRS,
                                           BLOCK_K, D)
                        x = _dot(k, q)
                        if ROTATE:
                            j = t - BLOCK_K + offs_k
                            _store_scores(out_ptr + row * stride_out, KEYS_MAX, j,
                                          _head_sum(xp, ksp, qa), (j >= j0) & (j < j1))
                        else:
                            j = t + offs_k
                            _store_scores(out_ptr + row * stride_out, KEYS_MAX, j,
                                          _head_sum(x, ks, qa), j < j1)
                        xp = x
                        ksp = ks
                    if ROTATE:
                        j = _last_tile(j0, j1, BLOCK_K) + offs_k
                        _store_scores(out_ptr + row * stride_out, KEYS_MAX, j,
                                      _head_sum(xp, ksp, qa), (j >= j0) & (j < j1))
                elif MODE == 2:
                    # decode, next_n <= NQ: the unit's tokens are stacked into one [NQ·H, D]
                    # query loaded once, and each key tile is one dot against all of them
                    _stacked_tokens(q_ptr, w_ptr, qs_ptr, k_ptr, stride_kb, ks_ptr, stride_ksb,
                                    bt_row, out_ptr, stride_out, KEYS_MAX, row0, s_lo, s_hi, s1,
                                    s2, j0, j1, NUM_BLOCKS, CMP, PAGE, CAUSAL, FP8_AS_F16,
                                    CONTIG, TMA, KS_PAIRS, SPLIT, ROTATE, NUM_STAGES, NQ,
                                    BLOCK_K, H, D)
                elif MODE == 3:
                    # prefill by groups of NQ tokens: each group's stacked query stays resident
                    # while the unit's key tiles (L2-hot after the first group) stream past it
                    for g in range(s_lo, s_hi, NQ):
                        last = tl.minimum(g + NQ, s_hi) - 1
                        jg = tl.minimum(j1, visible_keys(last, s1, s2, CMP, CAUSAL))
                        _stacked_tokens(q_ptr, w_ptr, qs_ptr, k_ptr, stride_kb, ks_ptr,
                                        stride_ksb, bt_row, out_ptr, stride_out, KEYS_MAX, row0,
                                        g, s_hi, s1, s2, j0, jg, NUM_BLOCKS, CMP, PAGE, CAUSAL,
                                        FP8_AS_F16, CONTIG, TMA, KS_PAIRS, SPLIT, ROTATE,
                                        NUM_STAGES, NQ, BLOCK_K, H, D)
                else:
                    for t in range(j0, j1, BLOCK_K):
                        j = t + offs_k
                        k, ks = _load_tile(k_ptr, stride_kb, ks_ptr, stride_ksb, bt_row, t, j1,
                                           NUM_BLOCKS, PAGE, FP8_AS_F16, CONTIG, TMA, KS_PAIRS,
                                           BLOCK_K, D)
                        for s in range(s_lo, s_hi):
                            vis = tl.minimum(visible_keys(s, s1, s2, CMP, CAUSAL), j1)
                            if t < vis:
                                row = (row0 + s).to(tl.int64)
                                q, qa = _load_query(q_ptr, w_ptr, qs_ptr, row, FP8_AS_F16, H, D)
                                _store_scores(out_ptr + row * stride_out, KEYS_MAX, j,
                                              _head_sum(_dot(k, q), ks, qa), j < vis)
            i += run
            kb = 0
            b, qb = next_row(b, qb, QB)
