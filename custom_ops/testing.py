"""Test and benchmark helpers: random indexer problems and the SPEC §1.5 comparison.

Part of the package (not test code) so that every backend's tests, the benchmarks and the
`python -m custom_ops` report judge outputs the same way.
"""
from __future__ import annotations

import torch

from .reference import golden_scores, topk_rows

FP8 = torch.float8_e4m3fn
FP8_MAX = 448.0


def make_indexer_inputs(*, q_lens, k_lens, layout="BSND", s1=None, t_pad=0, block_size=64,
                        qk_dtype=torch.int8, scale_dtype=None, cmp_ratio=1, sparse_mode=3,
                        sparse_count=2048, return_value=False, leading_zero=False, ties=False,
                        strided_key=True, pass_q_lens=True, seed=0, device="cpu"):
    """A random, valid indexer call: returns (args, kwargs) for npu_vllm_quant_lightning_indexer.

    q_lens/k_lens: query tokens and ORIGINAL key tokens per batch. BSND pads the query to S1
    (default max(q_lens)); TND appends `t_pad` rows past the last cumulative length. The key cache is
    a view of every other block of a bigger cache (strided along the block axis only) and the block
    table is a random permutation, so gather and stride bugs show. `ties=True` draws small integers
    (keys repeated, weights and scales exact in float32) so that every backend's scores are exact and
    ties are real.
    """
    g = torch.Generator().manual_seed(seed)
    batch = len(k_lens)
    if scale_dtype is None:
        scale_dtype = torch.float16 if qk_dtype == torch.int8 else torch.float32
    n1, d = 64, 128
    if layout == "BSND":
        s1 = max(q_lens + [1]) if s1 is None else s1
        q_shape = (batch, s1, n1)
        asq = torch.tensor(q_lens, dtype=torch.int32) if pass_q_lens else None
    else:
        cum = torch.cumsum(torch.tensor(q_lens, dtype=torch.int64), 0)
        q_shape = (int(cum[-1]) + t_pad if batch else t_pad, n1)
        asq = torch.cat([torch.zeros(1, dtype=torch.int64), cum]) if leading_zero else cum
        asq = asq.to(torch.int32)

    s2c = [k // cmp_ratio for k in k_lens]
    nblk = [-(-s // block_size) for s in s2c]
    max_blocks = max(nblk + [1])
    total_blocks = sum(nblk) + 3  # spare blocks nobody owns
    perm = torch.randperm(total_blocks, generator=g).to(torch.int32)
    block_table = torch.full((batch, max_blocks), total_blocks + 7, dtype=torch.int32)  # poison
    at = 0
    for b, n in enumerate(nblk):
        block_table[b, :n] = perm[at:at + n]
        at += n

    def values(shape, lo, hi):
        return torch.randint(lo, hi + 1, shape, generator=g)

    cache_shape = (total_blocks * (2 if strided_key else 1), block_size, 1, d)
    if ties:
        query = values((*q_shape, d), -3, 3)
        cache = values((8, d), -3, 3)[values(cache_shape[:3], 0, 7)]  # 8 distinct keys, repeated
        weights = values(q_shape, -4, 4).to(scale_dtype)
        qscale = torch.ones(q_shape, dtype=scale_dtype)
        kscale = torch.ones(cache_shape[:3], dtype=scale_dtype) * 2
    elif qk_dtype == torch.int8:
        query = values((*q_shape, d), -127, 127)
        cache = values(cache_shape, -127, 127)
        weights = torch.randn(q_shape, generator=g).mul(0.1).to(scale_dtype)
        qscale = torch.rand(q_shape, generator=g).add(0.01).div(127).to(scale_dtype)
        kscale = torch.rand(cache_shape[:3], generator=g).add(0.01).div(127).to(scale_dtype)
    else:
        query = torch.randn((*q_shape, d), generator=g).mul(100)
        cache = torch.randn(cache_shape, generator=g).mul(100)
        weights = torch.randn(q_shape, generator=g).mul(0.1).to(scale_dtype)
        qscale = torch.rand(q_shape, generator=g).add(0.01).div(FP8_MAX).to(scale_dtype)
        kscale = torch.rand(cache_shape[:3], generator=g).add(0.01).div(FP8_MAX).to(scale_dtype)
    query = query.clamp(-FP8_MAX, FP8_MAX).to(qk_dtype)
    cache = cache.clamp(-FP8_MAX, FP8_MAX).to(qk_dtype)
    if strided_key:
        key, kscale = cache[::2], kscale[::2]
    else:
        key = cache
    to = lambda t: None if t is None else t.to(device)  # noqa: E731
    args = tuple(to(t) for t in (query, key, weights, qscale, kscale))
    kwargs = dict(actual_seq_lengths_query=to(asq),
                  actual_seq_lengths_key=to(torch.tensor(k_lens, dtype=torch.int32)),
                  block_table=to(block_table), layout_query=layout, layout_key="PA_BSND",
                  sparse_count=sparse_count, sparse_mode=sparse_mode, cmp_ratio=cmp_ratio,
                  return_value=return_value)
    return args, kwargs


# a float32 sum of the 64 heads' terms, its product with the key scale: the rounding error
# bound in units of the terms' magnitude (float32 ulp _EPS32)
SUM_ULPS = 66
_EPS32 = 2.0 ** -24


class IndexerMismatch(AssertionError):
    pass


def _fail(where, what):
    raise IndexerMismatch(f"{where}: {what}")


def assert_indexer_close(indices, values, args, kwargs, *, rtol=1e-5, exact=False,
                         rounding="float64", value_rtol=1e-3, golden_device="cpu"):
    """Compare one backend's output with the golden, row by row (SPEC §1.5).

    Checks: -1 exactly in the padding and the count min(sparse_count, L); every index visible; no
    duplicates; the set equal to the golden set except indices whose golden score lies within a
    tolerance of the boundary (k-th) score; order non-increasing in golden score up to that
    tolerance; values equal golden scores (value_rtol) and -inf in the padding. The tolerance is
    `rtol · max|score of the row|`, or where it is larger the rounding a float32 head sum may
    carry, SUM_ULPS float32 ulps of the row's largest magnitude Σ_g |w_g·qscale_g|·ReLU(..)·kscale
    (cancellation between heads of opposite weights can leave a score far below its terms); a
    value may differ by value_rtol of itself plus that rounding of its own magnitude.
    `exact=True` demands the golden indices exactly (ties broken by the smaller index).
    `golden_device`: where the golden's arithmetic runs (golden_scores' `device`).
    """
    k = kwargs["sparse_count"]
    shape = (*args[0].shape[:-2], args[1].shape[2], k)  # [B, S1, N2, K] or [T, N2, K]
    if tuple(indices.shape) != shape or indices.dtype != torch.int32:
        _fail("sparse_indices", f"must be int32 {list(shape)}, got {indices.dtype} "
                                f"{list(indices.shape)}")
    want = shape if kwargs.get("return_value") else (0,)
    if tuple(values.shape) != want or values.dtype != torch.float32:
        _fail("sparse_values", f"must be float32 {list(want)}, got {values.dtype} "
                               f"{list(values.shape)}")
    idx_all = indices.detach().cpu().reshape(-1, k).long()
    val_all = values.detach().cpu().reshape(-1, k) if kwargs.get("return_value") else None
    covered = torch.zeros(idx_all.shape[0], dtype=torch.bool)
    for b, (row0, score, mag) in enumerate(golden_scores(
            *args, rounding=rounding, device=golden_device, magnitudes=True, **kwargs)):
        rows = score.shape[0]
        covered[row0:row0 + rows] = True
        idx = idx_all[row0:row0 + rows]
        where = f"batch {b} (rows {row0}..{row0 + rows - 1})"
        vis = (score > float("-inf")).sum(1)
        n = torch.clamp(vis, max=k)
        expect_valid = torch.arange(k)[None, :] < n[:, None]
        valid = idx >= 0
        bad = (valid != expect_valid).any(1) | ((idx < 0) & (idx != -1)).any(1)
        if bad.any():
            r = int(bad.nonzero()[0])
            _fail(where, f"row {row0 + r} has {int(valid[r].sum())} valid entries "
                         f"(-1 elsewhere expected: {int(n[r])} valid first, then -1), got {idx[r, :8].tolist()}...")
        if rows == 0 or score.shape[1] == 0:  # nothing visible: all -1 (above), values -inf
            if val_all is not None and (val_all[row0:row0 + rows] != float("-inf")).any():
                _fail(where, "sees no key, but its values are not all -inf")
            continue
        safe = idx.clamp(min=0, max=score.shape[1] - 1)
        out_of_range = valid & (idx >= score.shape[1])
        got = torch.where(valid, score.gather(1, safe), float("-inf"))
        invisible = valid & (out_of_range | (got == float("-inf")))
        if invisible.any():
            r, c = invisible.nonzero()[0].tolist()
            _fail(where, f"row {row0 + r} returns index {int(idx[r, c])}, which it does not see "
                         f"({int(vis[r])} visible keys)")
        srt = torch.where(valid, idx, torch.iinfo(torch.int64).max).sort(1).values
        dup = (srt[:, 1:] == srt[:, :-1]) & (srt[:, 1:] < torch.iinfo(torch.int64).max)
        if dup.any():
            r = int(dup.any(1).nonzero()[0])
            _fail(where, f"row {row0 + r} returns a duplicate index")
        ref_idx, ref_val = topk_rows(score, k)
        if exact:
            diff = (idx != ref_idx.long()).any(1)
            if diff.any():
                r = int(diff.nonzero()[0])
                _fail(where, f"row {row0 + r} differs from the golden: got {idx[r, :8].tolist()}..., "
                             f"want {ref_idx[r, :8].tolist()}...")
        finite = torch.where(score > float("-inf"), score.abs(), 0.0)
        tol = rtol * finite.max(1).values  # [rows]
        if not exact:  # (exact: integer inputs, every backend's arithmetic exact)
            tol = torch.maximum(tol, SUM_ULPS * _EPS32 * mag.max(1).values)
        live = n > 0
        kth = ref_val.double().gather(1, (n - 1).clamp(min=0)[:, None])[:, 0]
        low = valid & (got < (kth - tol)[:, None])
        if low.any():
            r, c = low.nonzero()[0].tolist()
            _fail(where, f"row {row0 + r} returns index {int(idx[r, c])} with golden score "
                         f"{float(got[r, c]):.6g}, below the boundary {float(kth[r]):.6g} by "
                         f"{float(kth[r] - got[r, c]):.3g} (tolerance {float(tol[r]):.3g})")
        must = (score > (kth + tol)[:, None]).sum(1)
        have = (valid & (got > (kth + tol)[:, None])).sum(1)
        miss = live & (must != have)
        if miss.any():
            r = int(miss.nonzero()[0])
            _fail(where, f"row {row0 + r} misses {int(must[r] - have[r])} keys scoring clearly above "
                         f"the boundary {float(kth[r]):.6g}")
        pair = valid[:, 1:]
        rise = pair & (got[:, 1:] > got[:, :-1] + tol[:, None])
        if rise.any():
            r, c = rise.nonzero()[0].tolist()
            _fail(where, f"row {row0 + r} is out of order at position {c + 1}: golden score "
                         f"{float(got[r, c + 1]):.6g} after {float(got[r, c]):.6g}")
        if val_all is not None:
            v = val_all[row0:row0 + rows].double()
            err = (v - got).abs()
            # absolute floor for scores that cancel to ~0: float32 rounding of the row's scale,
            # and of the entry's own head sum
            lim = value_rtol * got.abs() + torch.maximum(
                1e-3 * value_rtol * finite.max(1).values[:, None],
                SUM_ULPS * _EPS32 * torch.where(valid, mag.gather(1, safe), 0.0))
            off = (valid & (err > lim)) | (~valid & (v != float("-inf")))
            if off.any():
                r, c = off.nonzero()[0].tolist()
                _fail(where, f"row {row0 + r} value {float(v[r, c]):.6g} at position {c}, golden "
                             f"{float(got[r, c]):.6g} (off by {float(err[r, c]):.3g})")
    rest = idx_all[~covered]
    if (rest != -1).any():
        r = int((~covered).nonzero()[((rest != -1).any(1)).nonzero()[0]])
        _fail("padding rows", f"row {r} belongs to no batch but is not all -1")
    if val_all is not None and (val_all[~covered] != float("-inf")).any():
        _fail("padding rows", "values of rows that belong to no batch must be -inf")


def tie_keys(args, distinct: int, seed: int = 1, zero_share: float = 0.97) -> None:
    """Rewrite the key cache of indexer arguments `args` in place (through its strided view) so
    that scores tie: every slot one of `distinct` key vectors drawn from it (with its scale; at
    most as many as it has slots), or for distinct 0, a `zero_share` of the keys zero (their
    scores exactly 0)."""
    cache, kscale = args[1], args[4]
    n = cache.shape[0] * cache.shape[1]
    g = torch.Generator(device=cache.device).manual_seed(seed)
    flat = cache.reshape(n, -1).clone()
    if distinct == 0:
        # as bytes: zero is all-zero bits in int8 and fp8 alike (fp8 has no masked fill)
        flat.view(torch.uint8)[torch.rand(n, generator=g, device=cache.device) < zero_share] = 0
    else:
        pick = torch.randint(0, min(distinct, n), (n,), generator=g, device=cache.device)
        flat = flat[pick]
        kscale.copy_(kscale.reshape(n)[pick].reshape(kscale.shape))
    cache.copy_(flat.reshape(cache.shape))
