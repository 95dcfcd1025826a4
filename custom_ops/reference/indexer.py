"""Golden reference of npu_vllm_quant_lightning_indexer (SPEC §1.5).

    score(b, s, j) = Σ_g weights[g] · ReLU(qscale[g] · kscale[j] · (q[g] · k[j]))

over the 64 heads g, for every compressed key j that query token s of batch b sees (SPEC §1.3);
then the min(sparse_count, L) best j, score descending, ties to the smaller index, -1 padding.

`rounding="float64"` computes in float64 from the dequantized values (int8 and fp8 dot products
are exact there). `rounding="ascend_a3"` reproduces the Atlas A2/A3 arithmetic for comparing
against a real NPU: weights·qscale rounded to float16, ReLU(int32 dot / 1024) rounded to float16,
their products summed over heads in float32, then times kscale·1024.

This is plain, loop-over-batches torch code: slow, obvious, and what every backend is tested against.
"""
from __future__ import annotations

import torch

from .. import _checks
from ..metadata import query_lengths, visible_keys


def _batch_rows(problem, actual_seq_lengths_query):
    """(first query row, S1_b) per batch, as Python ints."""
    b = problem.batch
    if problem.layout_query == "BSND":
        s1 = query_lengths(actual_seq_lengths_query, b, "BSND", problem.max_s1).tolist()
        return [(i * problem.max_s1, n) for i, n in enumerate(s1)]
    a = actual_seq_lengths_query.to(torch.int64).cpu()
    ends = a[1:] if a.shape[0] == b + 1 else a
    starts = torch.cat([a.new_zeros(1), ends[:-1]])
    return list(zip(starts.tolist(), (ends - starts).tolist()))


def _batch_keys(key, key_dequant_scale, block_table, b, s2c, block_size):
    """The first s2c compressed keys of batch b and their scales, gathered through the block table."""
    nblk = -(-s2c // block_size)
    blocks = block_table[b, :nblk].long()
    k = key[blocks].reshape(nblk * block_size, key.shape[-1])[:s2c]  # [S2c, D]
    ks = key_dequant_scale[blocks].reshape(-1)[:s2c]  # [S2c]
    return k, ks


def golden_scores(query, key, weights, query_dequant_scale, key_dequant_scale, *,
                  actual_seq_lengths_query=None, actual_seq_lengths_key=None, block_table=None,
                  layout_query="BSND", sparse_mode=3, cmp_ratio=1, rounding="float64", device="cpu",
                  magnitudes=False, **_):
    """Per batch: (first output row, float64 scores [S1_b, S2c_b] with -inf where not visible),
    on the CPU. `device`: where the dot products and sums run (a GPU makes large problems
    cheap to check; the arithmetic is the same). `magnitudes`: each entry also carries the
    scores' magnitudes Σ_g |weights[g]·qscale[g]|·ReLU(...)·kscale (0 where not visible), the
    scale of a float32 head sum's rounding, which cancellation can leave far above the score."""
    if rounding not in ("float64", "ascend_a3"):
        raise ValueError(f"rounding must be 'float64' or 'ascend_a3', got {rounding!r}")
    if rounding == "ascend_a3" and query.dtype != torch.int8:
        raise ValueError(f"rounding 'ascend_a3' needs int8 query/key (Atlas A2/A3), got {query.dtype}")
    cpu = lambda t: None if t is None else t.cpu()  # noqa: E731
    query, key, weights = cpu(query), cpu(key), cpu(weights)
    qscale, kscale, block_table = cpu(query_dequant_scale), cpu(key_dequant_scale), cpu(block_table)
    asq, ask = cpu(actual_seq_lengths_query), cpu(actual_seq_lengths_key)
    problem = _checks.IndexerProblem(layout_query, ask.shape[0],
                                     query.shape[1] if layout_query == "BSND" else query.shape[0],
                                     key.shape[0], key.shape[1], block_table.shape[1], 1,
                                     sparse_mode, cmp_ratio, False)
    q_rows = query.reshape(-1, *query.shape[-2:])  # [B*S1 or T, N1, D]
    w_rows = weights.reshape(-1, weights.shape[-1])
    qs_rows = qscale.reshape(-1, qscale.shape[-1])
    out = []
    for b, (row0, s1) in enumerate(_batch_rows(problem, asq)):
        s2 = int(ask[b])
        s2c = s2 // cmp_ratio
        s_idx = torch.arange(max(s1, 0))
        vis = visible_keys(s_idx, s1, s2, cmp_ratio, sparse_mode)  # [S1_b]
        k, ks = _batch_keys(key, kscale, block_table, b, s2c, key.shape[1])
        q = q_rows[row0:row0 + s1].to(device).double()  # [S1_b, N1, D]
        dot = torch.einsum("sgd,jd->sgj", q, k.to(device).double())
        w, qs = w_rows[row0:row0 + s1].to(device), qs_rows[row0:row0 + s1].to(device)
        ks, vis = ks.to(device), vis.to(device)
        if rounding == "float64":
            a = w.double() * qs.double()
            r = torch.relu(dot)
            score = (a[..., None] * r).sum(1) * ks.double()[None, :]
            if magnitudes:
                mag = (a.abs()[..., None] * r).sum(1) * ks.double()[None, :]
        else:
            a = (w.float() * qs.float()).half()
            r = torch.relu(dot / 1024).half()
            score = (a.float()[..., None] * r.float()).sum(1) * (ks.float() * 1024)[None, :]
            score = score.double()
            if magnitudes:
                mag = (a.float().abs()[..., None] * r.float()).sum(1).double() * \
                    (ks.double() * 1024)[None, :]
        cols = torch.arange(s2c, device=device)
        seen = cols[None, :] < vis[:, None]
        score = torch.where(seen, score, float("-inf"))
        if magnitudes:
            out.append((row0, score.cpu(), torch.where(seen, mag, 0.0).cpu()))
        else:
            out.append((row0, score.cpu()))
    return out


def topk_rows(scores: torch.Tensor, k: int):
    """Best k columns per row of float64 scores: (int32 indices, float32 values), SPEC §1.4 order.

    A stable descending sort keeps equal scores in index order, i.e. ties go to the smaller index;
    -inf (not visible) entries become -1 / -inf.
    """
    rows, cols = scores.shape
    idx = torch.full((rows, k), -1, dtype=torch.int32)
    val = torch.full((rows, k), float("-inf"), dtype=torch.float32)
    if cols == 0 or rows == 0:
        return idx, val
    s, order = torch.sort(scores, dim=1, descending=True, stable=True)
    n = min(k, cols)
    s, order = s[:, :n], order[:, :n]
    live = s > float("-inf")
    idx[:, :n] = torch.where(live, order, -1).to(torch.int32)
    val[:, :n] = torch.where(live, s, float("-inf")).to(torch.float32)
    return idx, val


def golden_indexer(query, key, weights, query_dequant_scale, key_dequant_scale, *,
                   rounding="float64", **kwargs):
    """The op's golden: same arguments and outputs as npu_vllm_quant_lightning_indexer (on CPU);
    the metadata, a schedule only, is ignored."""
    kw = _checks.indexer_arguments(kwargs)
    p = _checks.check_indexer(query, key, weights, query_dequant_scale, key_dequant_scale,
                              **{**kw, "metadata": None})
    asq, ask, block_table = (kw["actual_seq_lengths_query"], kw["actual_seq_lengths_key"],
                             kw["block_table"])
    _checks.check_length_values(p, asq, ask, block_table)
    rows = query.shape[0] * query.shape[1] if p.layout_query == "BSND" else query.shape[0]
    k = p.sparse_count
    idx = torch.full((rows, k), -1, dtype=torch.int32)
    val = torch.full((rows, k), float("-inf"), dtype=torch.float32)
    for row0, score in golden_scores(
            query, key, weights, query_dequant_scale, key_dequant_scale,
            actual_seq_lengths_query=asq, actual_seq_lengths_key=ask, block_table=block_table,
            layout_query=p.layout_query, sparse_mode=p.sparse_mode, cmp_ratio=p.cmp_ratio,
            rounding=rounding):
        i, v = topk_rows(score, k)
        idx[row0:row0 + score.shape[0]], val[row0:row0 + score.shape[0]] = i, v
    shape = (*query.shape[:-2], key.shape[2], k)
    values = val.reshape(shape) if p.return_value else torch.empty(0, dtype=torch.float32)
    return idx.reshape(shape), values
