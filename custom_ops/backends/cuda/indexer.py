"""CUDA backend of npu_vllm_quant_lightning_indexer: two Triton phases over a bounded workspace
(phase 1 of decode as a Gluon kernel where it applies: indexer_logits_gluon).

Phase 1 (indexer_logits) reads every visible key once and writes fp32 scores per (query token,
key); phase 2 (topk/) selects each row's top-k exactly, in SPEC §1.4's order. The
workspace is rows × width fp32 logits (and each row's sample for the threshold) plus phase 2's
candidate arrays, at most WORKSPACE_BYTES per launch (configs.scratch_bytes counts it all):
longer problems run in chunks of batches (BSND) or query tokens (TND), each a standalone
sub-problem with its own schedule (SPEC §1.6). The width is the block table's capacity for small
workspaces. A call outside capture whose rows at that capacity would exceed
configs.SIZE_BY_LENGTHS_BYTES reads the longest key length back and sizes the rows by it: one
host sync per such call (not remembered per tensor version: a kernel or a graph replay that
writes the lengths bumps no version, and a stale width would drop keys). A call
captured in a CUDA graph cannot read the lengths (a replay may bring any length the table
holds): beyond configs.GRAPH_LOGITS_BYTES it scores the keys in windows of a fixed width and
merges each window's top-k into the previous ones' (_run_key_windows), so its workspace does not
grow with the table's capacity. Nothing else syncs with the host, and nothing does during
capture.

Metadata checks: the kernels check the header on the device (a mismatch yields all -1 rows, never
a read of unwritten memory); in eager mode, outside capture, a given metadata tensor is also
decoded on the host once per tensor version (every call for inference tensors, which have no
version), so a wrong one raises ValueError as on the CPU, including a schedule of other lengths
(metadata.check_covers). In a graph only the header is checked on the device (by phase 1, or
for a call run in chunks, which schedule themselves, by a gate on each chunk's schedule): a
captured metadata op recomputes the schedule with each replay's lengths.
"""
from __future__ import annotations

import dataclasses
import weakref

import torch
import triton
from triton.tools.tensor_descriptor import TensorDescriptor

from ... import _checks, metadata as md
from . import configs
from .configs import (DECODE_MAX_Q, WORKSPACE_BYTES, candidate_slots, segments,
                      topk_config)
from .indexer_logits import _indexer_header_gate_kernel, _indexer_logits_kernel

try:  # Gluon (Triton >= 3.5 on Hopper): phase 1's decode kernel (int8, small fp8 calls)
    from . import indexer_logits_gluon
except ImportError:
    indexer_logits_gluon = None
from . import plans
from .indexer_metadata import indexer_metadata, num_workers
from .launch import device_properties, empty, launch, tma_aligned, torch_step, warming
from .topk import (_indexer_merge_kernel, _indexer_place_kernel, _indexer_place_rank_kernel,
                   _indexer_rank_kernel, _indexer_segments_kernel, _indexer_threshold_kernel,
                   _indexer_unpack_kernel, _indexer_window_merge_kernel)

# Metadata already checked on the host: id of the metadata tensor -> (weak references to the
# tensors checked together, key, result), the key being what they were checked against
# (versions included).
_checked: dict = {}
_CHECKED_MAX = 64


def _once_per(cache: dict, tensors: tuple, key, compute):
    """compute() (a host sync) the first time these `tensors` (the same objects, alive: an id
    alone may be a dead tensor's, reused) are seen with `key`, its result after that; the
    oldest of _CHECKED_MAX entries is forgotten first."""
    seen = cache.get(id(tensors[0]))
    if (seen is not None and len(seen[0]) == len(tensors)
            and all(ref() is t for ref, t in zip(seen[0], tensors)) and seen[1] == key):
        return seen[2]
    value = compute()
    if len(cache) >= _CHECKED_MAX:
        cache.pop(next(iter(cache)))
    cache[id(tensors[0])] = (tuple(weakref.ref(t) for t in tensors), key, value)
    return value


def _max_query_tokens(asq, p: _checks.IndexerProblem, leading_zero: bool) -> int:
    """Most query tokens of one sequence in this call (host sync: eager checks only)."""
    if p.layout_query == "BSND":
        return p.max_s1 if asq is None else int(asq.clamp(0, p.max_s1).max())
    ends = asq.to(torch.int64).clamp(0, p.max_s1)
    if leading_zero:
        starts, ends = ends[:-1], ends[1:]
    else:
        starts = torch.cat([ends.new_zeros(1), ends[:-1]])
    return int((ends - starts.clamp(max=ends)).clamp(min=0).max())


def _check_metadata_on_host(metadata, asq, ask, block_table, p: _checks.IndexerProblem,
                            workers: int, block_k: int, leading_zero: bool):
    """Eager-mode check of a caller's metadata against this call (it syncs): once per metadata
    version, call signature and length tensor versions. The lengths are read anyway, so their
    values are checked as the CPU backend checks them (SPEC §1.1)."""
    def check():
        _checks.check_length_values(p, asq, ask, block_table)
        sched = md.decode(metadata)
        md.check_matches(sched, backend=md.BACKEND_CUDA, batch=p.batch,
                         sparse_mode=p.sparse_mode, cmp_ratio=p.cmp_ratio,
                         layout_query=p.layout_query, num_workers=workers)
        if sched.k_block <= 0 or sched.k_block % block_k:
            raise ValueError(f"metadata k_block must be a positive multiple of {block_k}, "
                             f"got {sched.k_block}")
        tokens = _max_query_tokens(asq, p, leading_zero)
        if sched.q_block > 0 and sched.q_block * sched.q_blocks < tokens:
            raise ValueError(
                f"metadata covers {sched.q_block * sched.q_blocks} query tokens per sequence "
                f"(q_block {sched.q_block} x {sched.q_blocks} blocks) but this call has a "
                f"sequence of {tokens}: compute the metadata with this call's max_seqlen_q")
        md.check_covers(sched, asq, ask, layout_query=p.layout_query, max_s1=p.max_s1)
    if any(t is not None and t.is_inference() for t in (metadata, asq, ask, block_table)):
        check()  # an inference tensor has no version counter to remember it by
        return
    tensors = (metadata, ask, block_table) + (() if asq is None else (asq,))
    key = (p, workers, block_k, tuple(t._version for t in tensors))
    _once_per(_checked, tensors, key, check)


def _in_graph_or_compile() -> bool:
    capturing = torch.cuda.is_available() and torch.cuda.is_current_stream_capturing()
    return capturing or torch.compiler.is_compiling()


def _tma_ok(key) -> bool:
    """Whether a TMA descriptor can describe the cache: 16-byte aligned base and block stride,
    rows of D contiguous elements (the slot stride D)."""
    return (key.stride(1) == key.shape[3] and key.stride(3) == 1
            and tma_aligned(key, [key.stride(0)]))


def _pairs_ok(kscale) -> bool:
    """Whether 2-byte key scales can be read as aligned int32 pairs (tiles start at even slots)."""
    return (kscale.element_size() == 2 and kscale.data_ptr() % 4 == 0
            and kscale.stride(0) % 2 == 0 and kscale.stride(1) == 1)


def _logits_path(p: _checks.IndexerProblem, rows: int, s1: int, is_int8: bool):
    """(unit tokens, phase-1 kernel path, NQ, config). A decode unit holds a sequence's tokens
    (BSND: up to S1; TND: up to all rows); path 1 = one token, query hoisted; 2 = up to
    max_stack tokens stacked into one dot, NQ = their power-of-two padding; 3 = groups of NQ =
    max_stack tokens stacked (prefill); 0 = per-token loop (prefill with max_stack 1)."""
    unit_tokens = s1 if p.layout_query == "BSND" else rows
    path, lc = configs.logits_path(is_int8, unit_tokens)
    if path == "single":
        return unit_tokens, 1, 1, lc
    if path in ("pair", "stacked"):
        return unit_tokens, 2, triton.next_power_of_2(unit_tokens), lc
    return unit_tokens, (3 if lc.max_stack > 1 else 0), lc.max_stack, lc


def _interpreted() -> bool:
    """Whether Triton runs the kernels in its interpreter (on CPU tensors)."""
    return bool(triton.knobs.runtime.interpret)


def _pdl_ok(dev: torch.device) -> bool:
    """Programmatic dependent launch needs Hopper or newer; the Triton interpreter has none.
    (On CPU tensors outside the interpreter, launches are only recorded and compiled for sm_90.)"""
    if dev.type == "cuda":
        return device_properties(dev).major >= 9
    return not _interpreted()


def _schedule_args(p: _checks.IndexerProblem, workers: int) -> dict:
    """indexer_metadata's arguments that a (sub-)problem fixes."""
    return dict(batch=p.batch, layout_query=p.layout_query, sparse_count=p.sparse_count,
                sparse_mode=p.sparse_mode, cmp_ratio=p.cmp_ratio, workers=workers)


def _new_outputs(rows: int, p: _checks.IndexerProblem, device):
    """Top-k indices [rows, k] int32 and values (float32 [rows, k], or [0] without values)."""
    idx = torch.empty((rows, p.sparse_count), dtype=torch.int32, device=device)
    val = torch.empty((rows, p.sparse_count) if p.return_value else (0,), dtype=torch.float32,
                      device=device)
    return idx, val


def _run(query, key, weights, qscale, kscale, asq, ask, block_table, meta, idx_out, val_out, *,
         p: _checks.IndexerProblem, rows: int, s1: int, leading_zero: bool, workers: int,
         width: int, key_windows: bool = False, check=None):
    """Both phases for one (sub-)problem whose `rows` output rows of `width` logits (at least
    the longest row's keys, or with key_windows the width of one window) fit the workspace.
    `check`: a metadata tensor that must also describe the call (the caller's, when `meta` is
    one computed here)."""
    if key_windows:
        return _run_key_windows(query, key, weights, qscale, kscale, asq, ask, block_table, meta,
                                idx_out, val_out, p=p, rows=rows, s1=s1,
                                leading_zero=leading_zero, workers=workers, width=width)
    is_int8 = query.dtype == torch.int8
    tc = topk_config()
    dev = query.device
    pdl = (tc.pdl or rows <= tc.pdl_max_rows) and _pdl_ok(dev)
    tnd = p.layout_query == "TND"
    unit_tokens, mode, nq, lc = _logits_path(p, rows, s1, is_int8)
    fp8_as_f16 = lc.fp8_as_f16 and not is_int8
    if fp8_as_f16 and unit_tokens > DECODE_MAX_Q:
        query = query.to(torch.float16)  # exact; spares the per-tile conversion of the token loop
    stride = width + configs.sample_columns(width)  # a row's logits, then its sample
    logits = empty((rows, stride), dtype=torch.float32, device=dev)
    err = empty((1,), dtype=torch.int32, device=dev)
    asq_arg = ask if asq is None else asq
    common = dict(CAUSAL=p.sparse_mode == 3, TND=tnd, HAS_ASQ=asq is not None,
                  LEADING_ZERO=leading_zero)
    contig = p.block_size % lc.block_k == 0
    split = lc.split_dot and nq >= 4
    # the Gluon kernel splits an int8 pair as well (its first token's epilogue under the
    # second token's dot: B64 64K next_n=2 -1.2 %, H200, session 33); the Triton kernel's
    # two-token split lost (LogitsConfig.split_dot)
    gluon_split = lc.split_dot and (nq >= 4 or nq == 2 and is_int8)
    check = meta if check is None else check
    # (Triton's interpreter runs no Gluon: there the Triton kernel stands in)
    few_keys = not lc.gluon_max_keys or rows * width <= lc.gluon_max_keys
    ctas = 2 if lc.gluon_two_ctas_keys and rows * width >= lc.gluon_two_ctas_keys else 1
    if (lc.gluon_stages and indexer_logits_gluon is not None and not _interpreted()
            and (few_keys or ctas == 2) and contig and _tma_ok(key)
            and indexer_logits_gluon.applies(query, kscale, mode, nq, gluon_split, lc.block_k,
                                             lc.fp8_as_f16, ctas)):
        steal = None
        if (lc.gluon_steal_keys and rows * width >= lc.gluon_steal_keys and nq == 1
                and (is_int8 or ctas == 2)):  # the pairs' (E, P) words and parts taken
            steal = empty((3 * workers * ctas * indexer_logits_gluon.PAIRS.value,),
                          dtype=torch.int32, device=dev)
        indexer_logits_gluon.launch_logits(
            workers, query, weights, qscale, key, kscale,
            block_table, asq_arg, ask, meta, check, err, logits,
            stride, p.batch, s1, rows, p.num_blocks, width, p.cmp_ratio, nq=nq, split=gluon_split,
            stages=lc.gluon_stages, pdl=pdl, common=common,
            FORMAT_ID=md.FORMAT_ID, BACKEND=md.BACKEND_CUDA, HEADER=md.HEADER_LEN, ctas=ctas,
            steal=steal)
    else:
        tma = lc.tma and contig and _tma_ok(key)
        keys = key
        if tma:  # the cache as [NB, PAGE, D] (strided along blocks only), one bulk copy per tile
            keys = TensorDescriptor(key, shape=[key.shape[0], key.shape[1], key.shape[3]],
                                    strides=[key.stride(0), key.stride(1), 1],
                                    block_shape=[1, lc.block_k, key.shape[3]])
        launch(_indexer_logits_kernel, (workers * lc.programs_per_worker,),
            query, weights, qscale, keys, key.stride(0), kscale, kscale.stride(0),
            block_table, block_table.stride(0), asq_arg, ask, meta, check, err, logits, stride,
            p.batch, s1, rows, p.num_blocks, width, p.cmp_ratio, PAGE=p.block_size,
            FP8_AS_F16=fp8_as_f16, MODE=mode, NQ=nq, CONTIG=contig, TMA=tma,
            KS_PAIRS=lc.scale_pairs and contig and _pairs_ok(kscale), SPLIT=split,
            ROTATE=lc.rotate_epilogue,
            NUM_STAGES=lc.num_stages, BLOCK_K=lc.block_k,
            P=lc.programs_per_worker, H=_checks.NUM_HEADS_Q, D=_checks.HEAD_DIM,
            FORMAT_ID=md.FORMAT_ID, BACKEND=md.BACKEND_CUDA, HEADER=md.HEADER_LEN, PDL=pdl,
            num_warps=lc.num_warps, **common,
            **(dict(maxnreg=lc.max_registers) if lc.max_registers else {}))
    # phase 2: with pdl (tc.pdl, or at most tc.pdl_max_rows rows) each kernel launches as a
    # programmatic dependent of the one before (its launch overlaps that kernel's tail; it
    # waits for its writes before reading); at most tc.phase2_pdl_max_rows rows, each after
    # the threshold
    chain = pdl or (rows <= tc.phase2_pdl_max_rows and _pdl_ok(dev))
    first = dict(PDL=chain, launch_pdl=pdl)  # the threshold: waits for all of phase 1
    dep = dict(PDL=chain, launch_pdl=chain)

    k = p.sparse_count
    cand_cap = candidate_slots(k, tc)  # few sizes: few compiled variants
    k_pad = cand_cap // 2
    block_b = triton.next_power_of_2(max(p.batch, 1))
    nb = tc.buckets if rows <= tc.bucket_max_rows else 0
    thr = empty((rows, 4), dtype=torch.int32, device=dev)
    # bucket counters and cursors (the sort order reads none: thr stands in for the pointer)
    bcnt = empty((rows, 2, nb), dtype=torch.int32, device=dev) if nb else thr
    ns = configs.threshold_samples(width, tc)
    thr_warps = max(tc.threshold_warps, ns // 4096)
    launch(_indexer_threshold_kernel, (rows,),
        logits, stride, thr, bcnt, asq_arg, ask, meta, err, p.batch, s1, rows, width, k,
        configs.target_candidates(k, cand_cap), p.cmp_ratio,
        NS=ns, BITS=tc.threshold_bits, STEP=tc.threshold_step,
        WARPS=thr_warps if tc.threshold_per_warp else 0, NB=nb, BLOCK_B=block_b,
        num_warps=thr_warps, **first, **common)
    g = segments(rows, width, tc)
    g_pad = triton.next_power_of_2(g)
    seg = empty((rows, g, cand_cap), dtype=torch.int64, device=dev)
    counts = empty((rows, g), dtype=torch.int32, device=dev)
    launch(_indexer_segments_kernel, (rows, g), logits, stride, thr, seg, counts, bcnt, width,
           K_PAD=k_pad, NB=nb, BLOCK_N=tc.block_n, BLOCK_C=tc.candidate_block,
           num_warps=tc.segment_warps, **dep)
    values = val_out if p.return_value else idx_out
    if nb:
        dense = empty((rows, cand_cap), dtype=torch.int64, device=dev)
        if rows >= tc.place_rank_rows:  # place and rank in one launch
            launch(_indexer_place_rank_kernel, (rows, configs.place_rank_programs(rows, g, tc)),
                logits, stride, thr, seg, counts, g, bcnt, dense, idx_out, values, k,
                RETURN_VALUE=p.return_value, K_PAD=k_pad, NB=nb, BLOCK_N=tc.block_n,
                TILE=max(tc.place_rank_tile, g_pad), G_PAD=g_pad, BLOCK_I=tc.place_rank_block,
                BLOCK_J=tc.bucket_block_j, num_warps=tc.place_warps, **dep)
            return
        group = empty((rows, cand_cap), dtype=torch.int32, device=dev)
        total = empty(rows, dtype=torch.int32, device=dev)
        filled = empty(rows, dtype=torch.int32, device=dev)
        launch(_indexer_place_kernel, (rows, g, configs.place_programs(g, k, cand_cap, tc)),
            logits, stride, thr, seg, counts, bcnt, dense, group, total, filled, idx_out,
            values, k, RETURN_VALUE=p.return_value, K_PAD=k_pad, NB=nb, BLOCK_N=tc.block_n,
            BLOCK_C=tc.candidate_block, G_PAD=g_pad, num_warps=tc.place_warps, **dep)
        launch(_indexer_rank_kernel, (rows, configs.rank_programs(k, cand_cap, tc)),
            dense, group, total, filled, idx_out, values, k, RETURN_VALUE=p.return_value,
            CAP=cand_cap,
            BLOCK_I=tc.bucket_block, BLOCK_J=tc.bucket_block_j, num_warps=tc.rank_warps, **dep)
        return
    mono = empty((rows, cand_cap), dtype=torch.int32, device=dev)
    cand_idx = empty((rows, cand_cap), dtype=torch.int32, device=dev)
    total = empty(rows, dtype=torch.int32, device=dev)
    launch(_indexer_merge_kernel, (rows, g),
        logits, stride, thr, seg, counts, mono, cand_idx, total, k, K_PAD=k_pad,
        BLOCK_N=tc.block_n, G_PAD=g_pad, num_warps=tc.num_warps, **dep)
    # sorted in place: torch.sort copies its input into the values output unless they are one
    # tensor (the copy was 67 µs of a 4096-token prefill's 3.5 ms on the H200)
    perm = empty((rows, cand_cap), dtype=torch.int64, device=dev)
    torch_step(_sort_rows, mono, perm)
    block = min(1024, triton.next_power_of_2(k))
    launch(_indexer_unpack_kernel, (rows, triton.cdiv(k, block)),
        mono, perm, cand_cap, cand_idx, total, idx_out, values, k,
        RETURN_VALUE=p.return_value, BLOCK=block, num_warps=4, **dep)


def _sort_rows(mono, perm):
    torch.sort(mono, dim=1, descending=True, stable=True, out=(mono, perm))


def _run_key_windows(query, key, weights, qscale, kscale, asq, ask, block_table, meta,
                     idx_out, val_out, *, p: _checks.IndexerProblem, rows: int, s1: int,
                     leading_zero: bool, workers: int, width: int):
    """A problem whose block table is wider than its logits rows (a CUDA graph over a wide
    table, SPEC §1.6): its compressed keys in windows of `width`, each window a sub-problem of
    the same rows (key lengths shifted down by the window's start, the table's columns of the
    window, its own schedule) whose top-k is merged into that of the windows before it. The
    window count follows the table's shape, not the lengths: a window past every row's length
    schedules nothing and costs its launches only. `meta` (the caller's) is checked by every
    window's phase 1, not used as a schedule."""
    dev = query.device
    k = p.sparse_count
    cols = width // p.block_size
    windows = -(-p.max_blocks_per_seq // cols)
    # window w's key lengths: shifted down by its start (a multiple of cmp_ratio, so SPEC §1.3's
    # visible keys shift exactly), clamped at 0
    starts = torch.arange(windows, device=dev, dtype=torch.int64) * (width * p.cmp_ratio)
    asks = (ask.to(torch.int64)[None, :] - starts[:, None]).clamp_(min=0).to(torch.int32)
    metas = indexer_metadata(asq, asks, max_seqlen_q=s1, window_keys=width,
                             **_schedule_args(p, workers))
    # each window's top-k with values (the merge compares scores): A holds the merged result of
    # the windows so far, B the current window's, C the next merge's output
    a, b, c = ((empty((rows, k), torch.int32, dev), empty((rows, k), torch.float32, dev))
               for _ in range(3))
    k_pad = triton.next_power_of_2(k)
    block = min(256, k_pad)
    for w in range(windows):
        c0 = w * cols
        c1 = min(p.max_blocks_per_seq, c0 + cols)
        sub = dataclasses.replace(p, max_blocks_per_seq=c1 - c0, return_value=True)
        dst = a if w == 0 else b
        _run(query, key, weights, qscale, kscale, asq, asks[w], block_table[:, c0:c1], metas[w],
             dst[0], dst[1], p=sub, rows=rows, s1=s1, leading_zero=leading_zero,
             workers=workers, width=(c1 - c0) * p.block_size, check=meta)
        if w == 0:
            continue
        last = w == windows - 1
        out = (idx_out, val_out if p.return_value else c[1]) if last else c
        launch(_indexer_window_merge_kernel, (rows, triton.cdiv(k, block)),
            a[0], a[1], b[0], b[1], out[0], out[1], k, c0 * p.block_size,
            RETURN_VALUE=p.return_value or not last, K_PAD=k_pad, LOG_K=k_pad.bit_length() - 1,
            BLOCK=block, num_warps=4)
        a, c = c, a


def _tnd_chunk_lengths(asq, ask, r0, r1, leading_zero, causal):
    """Lengths of the sub-problem made of query rows [r0, r1) (TND), without a sync.

    Batch b keeps its tokens inside the window; its key length is cut so that token s of the
    window sees exactly what it saw in the whole problem: S2' = S2 - (S1 - end of window)."""
    a = asq.to(torch.int64)
    ends = a[1:] if leading_zero else a
    new_end = ends.clamp(r0, r1)  # batch b's window starts where batch b-1's ends
    s2 = ask.to(torch.int64)
    if causal:
        s2 = (s2 - (ends - new_end)).clamp(min=0)
    return (new_end - r0).to(torch.int32), s2.to(torch.int32)


def _run_token_windows(query, key, weights, qscale, kscale, asq, ask, block_table, idx_out,
                       val_out, *, p: _checks.IndexerProblem, leading_zero: bool,
                       rows_per_chunk: int, workers: int, width: int, key_windows: bool, gate):
    """A TND problem (p.max_s1 rows) in windows of rows_per_chunk query rows, each a standalone
    sub-problem with its own lengths (computed on the device) and schedule (passed through
    `gate`: see _gated)."""
    rows = p.max_s1
    for r0 in range(0, rows, rows_per_chunk):
        r1 = min(rows, r0 + rows_per_chunk)
        sub_asq, sub_ask = _tnd_chunk_lengths(asq, ask, r0, r1, leading_zero, p.sparse_mode == 3)
        sub = dataclasses.replace(p, max_s1=r1 - r0)
        meta = gate(indexer_metadata(sub_asq, sub_ask, max_seqlen_q=r1 - r0,
                                     **_schedule_args(p, workers)))
        _run(query[r0:r1], key, weights[r0:r1], qscale[r0:r1], kscale, sub_asq, sub_ask,
             block_table, meta, idx_out[r0:r1], val_out[r0:r1] if p.return_value else val_out,
             p=sub, rows=r1 - r0, s1=r1 - r0, leading_zero=False, workers=workers, width=width,
             key_windows=key_windows)


def _gated(meta, check, p: _checks.IndexerProblem, workers: int, block_k: int):
    """`meta`, the schedule computed for one chunk of a call, made unusable on the device
    unless `check` (the caller's metadata, if any) describes the whole call. A chunk schedules
    itself, so its phase 1 would never read the caller's header; in a CUDA graph, where the host
    check cannot run, a wrong one must still give -1 rows, as it does in one launch."""
    def gate(check):
        launch(_indexer_header_gate_kernel, (1,), check, meta, workers, p.batch, p.cmp_ratio,
               BLOCK_K=block_k, CAUSAL=p.sparse_mode == 3, TND=p.layout_query == "TND",
               FORMAT_ID=md.FORMAT_ID, BACKEND=md.BACKEND_CUDA, num_warps=1)
    if check is not None:
        gate(check)
    elif meta.is_cuda and not torch.cuda.is_current_stream_capturing():
        with warming():  # built and loaded only: a capture of this call with metadata gates it,
            gate(meta)   # and no kernel can be loaded during a capture
    return meta


def _solve(query, key, weights, qscale, kscale, asq, ask, block_table, metadata, idx_out,
           val_out, *, p: _checks.IndexerProblem, rows: int, leading_zero: bool, workers: int,
           width: int, key_windows: bool):
    """Both phases for the whole call: in one launch, or in chunks of rows that fit the
    workspace (SPEC §1.6); key_windows: keys in windows of `width` (a CUDA graph over a wide
    table)."""
    tnd = p.layout_query == "TND"
    s1 = p.max_s1
    k = p.sparse_count
    rows_per_chunk = configs.rows_per_chunk(width, k, WORKSPACE_BYTES, key_windows=key_windows)
    if rows <= rows_per_chunk:
        meta = metadata  # key windows make their own schedules (and check this one)
        if meta is None and not key_windows:
            meta = indexer_metadata(asq, ask, max_seqlen_q=s1, **_schedule_args(p, workers))
        _run(query, key, weights, qscale, kscale, asq, ask, block_table, meta, idx_out, val_out,
             p=p, rows=rows, s1=s1, leading_zero=leading_zero, workers=workers, width=width,
             key_windows=key_windows)
        return
    block_k = _logits_path(p, rows, s1, query.dtype == torch.int8)[3].block_k  # as the host check

    def gate(meta):
        return _gated(meta, metadata, p, workers, block_k)
    if tnd:
        _run_token_windows(query, key, weights, qscale, kscale, asq, ask, block_table, idx_out,
                           val_out, p=p, leading_zero=leading_zero,
                           rows_per_chunk=rows_per_chunk, workers=workers, width=width,
                           key_windows=key_windows, gate=gate)
    elif rows_per_chunk >= s1:  # whole sequences per chunk
        per_chunk = rows_per_chunk // s1
        for b0 in range(0, p.batch, per_chunk):
            b1 = min(p.batch, b0 + per_chunk)
            sub_asq = None if asq is None else asq[b0:b1]
            sub = dataclasses.replace(p, batch=b1 - b0)
            meta = gate(indexer_metadata(sub_asq, ask[b0:b1], max_seqlen_q=s1,
                                         **_schedule_args(sub, workers)))
            r0, r1 = b0 * s1, b1 * s1
            _run(query[r0:r1], key, weights[r0:r1], qscale[r0:r1], kscale, sub_asq, ask[b0:b1],
                 block_table[b0:b1], meta, idx_out[r0:r1],
                 val_out[r0:r1] if p.return_value else val_out,
                 p=sub, rows=r1 - r0, s1=s1, leading_zero=False, workers=workers, width=width,
                 key_windows=key_windows)
    else:
        # one sequence's S1 rows exceed a chunk: each sequence is a one-sequence TND problem
        # over its rows (rows past its length are TND's padding: -1), cut into token windows
        one = dataclasses.replace(p, batch=1, layout_query="TND")
        for b in range(p.batch):
            r0, r1 = b * s1, (b + 1) * s1
            asq_b = asq[b:b + 1] if asq is not None else torch.full(
                (1,), s1, dtype=torch.int32, device=ask.device)
            _run_token_windows(query[r0:r1], key, weights[r0:r1], qscale[r0:r1], kscale,
                               asq_b, ask[b:b + 1], block_table[b:b + 1], idx_out[r0:r1],
                               val_out[r0:r1] if p.return_value else val_out, p=one,
                               leading_zero=False, rows_per_chunk=rows_per_chunk,
                               workers=workers, width=width, key_windows=key_windows,
                               gate=gate)


# capture paths already built and loaded by an eager call: (call signature, configs) -> True,
# the oldest forgotten first beyond _WARMED_MAX
_warmed: dict = {}
_WARMED_MAX = 256


def _warm_capture_path(query, key, weights, qscale, kscale, asq, ask, block_table, metadata, *,
                       p: _checks.IndexerProblem, rows: int, leading_zero: bool, workers: int,
                       width: int, key_windows: bool):
    """Build and load, without running them, the kernels a CUDA graph capture of this call would
    launch (launch.warming): its rows are `width` wide (the table's capacity, or key windows)
    where this eager call's follow the lengths, and a kernel cannot be loaded during a capture.
    Once per call signature and configuration; host work only."""
    if _interpreted():
        return  # nothing to load
    sig = (p, rows, query.dtype, weights.dtype, qscale.dtype, kscale.dtype, asq is None,
           leading_zero, metadata is None, query.device, width, key_windows, topk_config(),
           tuple(sorted(configs.LOGITS.items())))
    if sig in _warmed:
        return
    idx, val = _new_outputs(rows, p, query.device)
    with warming():
        _solve(query, key, weights, qscale, kscale, asq, ask, block_table, metadata, idx, val,
               p=p, rows=rows, leading_zero=leading_zero, workers=workers, width=width,
               key_windows=key_windows)
    if len(_warmed) >= _WARMED_MAX:
        _warmed.pop(next(iter(_warmed)))
    _warmed[sig] = True


@torch.library.impl("custom::npu_vllm_quant_lightning_indexer", "CUDA")
def npu_vllm_quant_lightning_indexer(query, key, weights, query_dequant_scale, key_dequant_scale,
                                     **kwargs):
    kw = _checks.indexer_arguments(kwargs)
    p = _checks.check_indexer(query, key, weights, query_dequant_scale, key_dequant_scale, **kw)
    with torch.cuda.device(query.device):  # Triton launches on the current device
        return indexer(query, key, weights, query_dequant_scale, key_dequant_scale,
                       kw["actual_seq_lengths_query"], kw["actual_seq_lengths_key"],
                       kw["block_table"], kw["metadata"], p=p, workers=num_workers(query.device))


def indexer(query, key, weights, qscale, kscale, asq, ask, block_table, metadata, *,
            p: _checks.IndexerProblem, workers: int):
    """The CUDA indexer on checked arguments (also runs under TRITON_INTERPRET on CPU tensors)."""
    tnd = p.layout_query == "TND"
    leading_zero = tnd and asq.shape[0] == p.batch + 1
    s1 = p.max_s1
    rows = p.max_s1 if tnd else p.batch * p.max_s1
    k = p.sparse_count
    shape = (*query.shape[:-2], key.shape[2], k)
    idx_out, val_out = _new_outputs(rows, p, query.device)
    cap = p.max_blocks_per_seq * p.block_size
    if rows == 0 or p.batch == 0 or cap == 0 or key.shape[0] == 0:  # (no block: no key to see)
        idx_out.fill_(-1)
        val_out.fill_(float("-inf"))
        return idx_out.reshape(shape), val_out.reshape(shape) if p.return_value else val_out
    query = query.reshape(rows, *query.shape[-2:]).contiguous()
    weights = weights.reshape(rows, -1).contiguous()
    qscale = qscale.reshape(rows, -1).contiguous()
    # the kernels index these with unit strides (a no-op for the usual contiguous ones)
    asq = None if asq is None else asq.contiguous()
    ask, block_table = ask.contiguous(), block_table.contiguous()
    metadata = None if metadata is None else metadata.contiguous()
    graph = _in_graph_or_compile()  # the lengths cannot be read
    lc = _logits_path(p, rows, s1, query.dtype == torch.int8)[3]
    if metadata is not None and query.device.type == "cuda" and not graph:
        _check_metadata_on_host(metadata, asq, ask, block_table, p, workers, lc.block_k,
                                leading_zero)
    if asq is not None and s1 > DECODE_MAX_Q:
        # Query lengths past S1 (BSND) or T (TND) break SPEC §1.1; the kernels clamp them where
        # they walk rows, and in query blocks (q_block > 0) the schedule must count its units
        # from the same clamped lengths, or phase 2 would rank keys no unit scored. (Decode
        # schedules one block per sequence, whose units do not depend on the query length.)
        asq = asq.clamp(0, s1)

    graph_width = configs.window_keys(rows, cap, p.block_size)
    if graph:  # the table's width, or windows of keys beyond a budget
        width = graph_width
    else:
        width = cap  # keys per logits row
        if rows * cap * 4 > configs.SIZE_BY_LENGTHS_BYTES:
            width = configs.row_width(cap, int(ask.max()) // p.cmp_ratio)
        if (width != graph_width or graph_width < cap) and query.device.type == "cuda":
            # a capture of this call would launch kernels this call does not: load them now
            _warm_capture_path(query, key, weights, qscale, kscale, asq, ask, block_table,
                               metadata, p=p, rows=rows, leading_zero=leading_zero,
                               workers=workers, width=graph_width,
                               key_windows=graph_width < cap)
    tensors = (query, key, weights, qscale, kscale, asq, ask, block_table, metadata, idx_out,
               val_out)

    def solve():
        _solve(*tensors, p=p, rows=rows, leading_zero=leading_zero, workers=workers,
               width=width, key_windows=graph and width < cap)
    # an eager call in one launch of both phases (a chunked one would hold every chunk's
    # workspace while recorded, and its replay them all in one block: SPEC §1.6)
    planned = (not graph and query.device.type == "cuda" and not _interpreted()
               and plans.usable()
               and rows <= configs.rows_per_chunk(width, p.sparse_count, WORKSPACE_BYTES))
    if not planned:
        solve()
    else:  # replayed from the plan of its signature (plans.py)
        plans.call((p, rows, leading_zero, workers, width, query.device, lc, topk_config(),
                    WORKSPACE_BYTES, *map(plans.signature, tensors)), tensors, query.device,
                   solve)
    return idx_out.reshape(shape), val_out.reshape(shape) if p.return_value else val_out
