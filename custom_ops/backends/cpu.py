"""CPU backend of the indexer and its metadata: the reference semantics, vectorised.

Scores are exact before the head sum: int8 dot products are computed in float32 (|q·k| < 2^24)
and fp8 ones in float64 (products of e4m3 values fit 53 bits). The head sum and the key scale are
float32, as on the accelerators. Selection packs (score, index) into one int64 whose order is
"score descending, then index ascending", so `torch.topk` over it is exact and deterministic.
Work runs per batch, over bounded chunks of query rows × keys (SPEC §1.6), merging a running top-k.
"""
from __future__ import annotations

import torch

from .. import _checks, metadata as md

CPU_SPLIT = md.SplitParams(md.BACKEND_CPU, num_workers=1, q_block=0, k_block=8192)
_ELEMS_PER_CHUNK = 1 << 22  # query rows × heads × keys per chunk: 16 MiB of float32 scores
_LOW32 = 0xFFFFFFFF


# The order key of a key no row may see: below every visible key's, so a visible key is always
# returned before it, whatever its score (a visible key whose monotone bits are this lowest value,
# the NaN 0xFFFFFFFF, takes the next one up).
_HIDDEN = -(1 << 31)


def pack_scores(score: torch.Tensor, index: torch.Tensor,
                visible: torch.Tensor | None = None) -> torch.Tensor:
    """int64 keys ordered like (score descending, index ascending) -> plain descending order.

    float32 bits are made monotone as signed integers (negative values have their magnitude bits
    flipped; a NaN orders by its bits, as in the CUDA kernels: 0x7FFFFFFF above every number, a
    negative NaN below -inf) and placed above the complemented index. Keys not `visible` rank
    last, so a visible key is returned even when its score overflowed to -inf or is NaN: -1
    appears only as padding (SPEC §1.4), whatever the inputs' values.
    """
    bits = score.contiguous().view(torch.int32).to(torch.int64)
    mono = torch.where(bits < 0, bits ^ 0x7FFFFFFF, bits)
    if visible is not None:
        mono = torch.where(visible, mono.clamp(min=_HIDDEN + 1), _HIDDEN)
    return (mono << 32) + (_LOW32 - index.to(torch.int64))


def unpack_scores(packed: torch.Tensor):
    """Inverse of pack_scores: (float32 score, int64 index, hidden)."""
    mono = packed >> 32
    bits = torch.where(mono < 0, mono ^ 0x7FFFFFFF, mono).to(torch.int32)
    return bits.view(torch.float32), _LOW32 - (packed & _LOW32), mono == _HIDDEN


_PAD = (_HIDDEN << 32) + _LOW32  # sorts last, reads as -1


def _batch_topk(q, a, keys, ks, vis, k, compute_dtype):
    """Packed top-k of one batch. q [S1b, N1, D], a = weights·qscale [S1b, N1] float32,
    keys [S2c, D], ks [S2c] float32, vis [S1b] visible keys per row -> int64 [S1b, <=k] sorted."""
    rows, n1, d = q.shape
    q_chunk = max(1, min(rows, 256))
    best_rows = []
    for r0 in range(0, rows, q_chunk):
        qr = q[r0:r0 + q_chunk].to(compute_dtype).reshape(-1, d)
        ar, vr = a[r0:r0 + q_chunk], vis[r0:r0 + q_chunk]
        n = ar.shape[0]
        limit = int(vr.max()) if n else 0
        k_chunk = max(512, _ELEMS_PER_CHUNK // (n * n1))
        best = torch.empty(n, 0, dtype=torch.int64)
        for j0 in range(0, limit, k_chunk):
            j1 = min(limit, j0 + k_chunk)
            dot = (qr @ keys[j0:j1].to(compute_dtype).T).view(n, n1, j1 - j0).float()
            score = dot.relu_().mul_(ar[..., None]).sum(1).mul_(ks[None, j0:j1]).add_(0.0)
            cols = torch.arange(j0, j1)
            seen = cols[None, :] < vr[:, None]
            cand = torch.cat([best, pack_scores(score, cols.expand(n, -1), seen)], 1)
            best = torch.topk(cand, min(k, cand.shape[1]), dim=1, sorted=False).values
        best_rows.append(torch.sort(best, dim=1, descending=True).values)
    # chunks whose rows see fewer keys are narrower: pad them with _PAD. (A float fill value, as
    # F.pad takes, rounds the int64 and unpacks as -3.4e38 instead of -inf.)
    out = torch.full((rows, max((t.shape[1] for t in best_rows), default=0)), _PAD,
                     dtype=torch.int64)
    for r0, t in zip(range(0, rows, q_chunk), best_rows):
        out[r0:r0 + t.shape[0], :t.shape[1]] = t
    return out


@torch.library.impl("custom::npu_vllm_quant_lightning_indexer", "CPU")
def npu_vllm_quant_lightning_indexer(query, key, weights, query_dequant_scale, key_dequant_scale,
                                     **kwargs):
    kw = _checks.indexer_arguments(kwargs)
    p = _checks.check_indexer(query, key, weights, query_dequant_scale, key_dequant_scale, **kw)
    asq, ask = kw["actual_seq_lengths_query"], kw["actual_seq_lengths_key"]
    block_table, metadata = kw["block_table"], kw["metadata"]
    _checks.check_length_values(p, asq, ask, block_table)
    if metadata is not None:
        sched = md.decode(metadata)
        md.check_matches(sched, backend=md.BACKEND_CPU, batch=p.batch,
                         sparse_mode=p.sparse_mode, cmp_ratio=p.cmp_ratio,
                         layout_query=p.layout_query)
        md.check_covers(sched, asq, ask, layout_query=p.layout_query, max_s1=p.max_s1)
    compute_dtype = torch.float32 if query.dtype == torch.int8 else torch.float64

    q_rows = query.reshape(-1, *query.shape[-2:])  # [B*S1 or T, N1, D]
    a_rows = weights.float() * query_dequant_scale.float()  # exact for float16 inputs
    a_rows = a_rows.reshape(-1, a_rows.shape[-1])
    s1 = md.query_lengths(asq, p.batch, p.layout_query, p.max_s1)
    if p.layout_query == "BSND":
        starts = torch.arange(p.batch, dtype=torch.int64) * p.max_s1
    else:
        starts = torch.cumsum(s1, 0) - s1
    s2 = ask.to(torch.int64)
    k = p.sparse_count
    out = torch.full((q_rows.shape[0], k), _PAD, dtype=torch.int64)
    for b, (row0, n, s2_b) in enumerate(zip(starts.tolist(), s1.tolist(), s2.tolist())):
        s2c = s2_b // p.cmp_ratio
        if n <= 0 or s2c <= 0:
            continue
        vis = md.visible_keys(torch.arange(n), n, s2_b, p.cmp_ratio, p.sparse_mode)
        nblk = -(-s2c // p.block_size)
        blocks = block_table[b, :nblk].long()
        keys = key[blocks].reshape(nblk * p.block_size, -1)[:s2c]  # [S2c, D]
        ks = key_dequant_scale[blocks].reshape(-1)[:s2c].float()
        best = _batch_topk(q_rows[row0:row0 + n], a_rows[row0:row0 + n], keys, ks, vis, k,
                           compute_dtype)
        out[row0:row0 + n, :best.shape[1]] = best
    score, index, hidden = unpack_scores(out)
    index = torch.where(hidden, -1, index).to(torch.int32)
    shape = (*query.shape[:-2], key.shape[2], k)
    values = torch.where(hidden, float("-inf"), score).reshape(shape) if p.return_value \
        else torch.empty(0, dtype=torch.float32)
    return index.reshape(shape), values


@torch.library.impl("custom::npu_vllm_quant_lightning_indexer_metadata", "CPU")
def npu_vllm_quant_lightning_indexer_metadata(**kwargs):
    kw = _checks.metadata_arguments(kwargs)
    batch = _checks.check_metadata_args(**kw)
    return md.compute(CPU_SPLIT, kw["actual_seq_lengths_query"], kw["actual_seq_lengths_key"],
                      batch=batch, max_seqlen_q=kw["max_seqlen_q"], layout_query=kw["layout_query"],
                      sparse_count=kw["sparse_count"], sparse_mode=kw["sparse_mode"],
                      cmp_ratio=kw["cmp_ratio"], device="cpu")
