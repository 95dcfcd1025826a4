"""The comparison helper itself (SPEC §1.5): it must reject every kind of wrong output."""
import pytest
import torch

from custom_ops.reference import golden_indexer, golden_scores
from custom_ops.testing import IndexerMismatch, assert_indexer_close, make_indexer_inputs


@pytest.fixture
def case():
    args, kwargs = make_indexer_inputs(q_lens=[4, 2], k_lens=[300, 40], sparse_count=64,
                                       return_value=True, block_size=16, seed=3)
    idx, val = golden_indexer(*args, **kwargs)
    return args, kwargs, idx, val


def test_accepts_the_golden(case):
    args, kwargs, idx, val = case
    assert_indexer_close(idx, val, args, kwargs, exact=True)


def _reject(case, change, exact=False):
    args, kwargs, idx, val = case
    idx, val = idx.clone(), val.clone()
    change(idx, val)
    with pytest.raises(IndexerMismatch):
        assert_indexer_close(idx, val, args, kwargs, exact=exact)


def test_rejects_a_wrong_set(case):
    def change(idx, val):  # batch 0 row 3 sees 300 keys; put a low-scoring one in place of the best
        row = idx[0, 3, 0]
        low = [j for j in range(300) if j not in row.tolist()][0]
        row[0] = low
    _reject(case, change)


def test_rejects_a_wrong_order(case):
    def change(idx, val):
        idx[0, 3, 0, [0, 40]] = idx[0, 3, 0, [40, 0]]
    _reject(case, change)


def test_rejects_a_missing_minus_one(case):
    def change(idx, val):  # batch 1 sees 40 keys < 64: padding starts at 40
        idx[1, 1, 0, 45] = 7
    _reject(case, change)


def test_rejects_an_extra_minus_one(case):
    def change(idx, val):
        idx[0, 3, 0, 63] = -1
    _reject(case, change)


def test_rejects_a_duplicate(case):
    def change(idx, val):
        idx[0, 3, 0, 10] = idx[0, 3, 0, 11]
    _reject(case, change)


def test_rejects_a_wrong_value(case):
    def change(idx, val):
        val[0, 3, 0, 5] *= 1.01
    _reject(case, change)


def test_rejects_a_finite_value_in_padding(case):
    def change(idx, val):  # batch 1 row 1 sees 40 keys: slot 45 is padding
        val[1, 1, 0, 45] = 0.0
    _reject(case, change)


def test_rejects_a_finite_value_in_a_padding_row(case):
    def change(idx, val):
        val[1, 3, 0, 0] = 0.0
    _reject(case, change)


def test_rejects_written_padding_rows(case):
    def change(idx, val):  # batch 1 has 2 of S1 = 4 query tokens: rows 2, 3 are padding
        idx[1, 3, 0, 0] = 0
    _reject(case, change)


def test_rejects_a_finite_value_of_a_batch_without_keys():
    args, kwargs = make_indexer_inputs(q_lens=[2, 3], k_lens=[50, 0], sparse_count=8,
                                       return_value=True, seed=1)
    idx, val = golden_indexer(*args, **kwargs)
    assert_indexer_close(idx, val, args, kwargs, exact=True)
    val = val.clone()
    val[1] = 0.0
    with pytest.raises(IndexerMismatch, match="sees no key"):
        assert_indexer_close(idx, val, args, kwargs)


@pytest.mark.parametrize("change", ["indices-shape", "indices-dtype", "values-dtype"])
def test_rejects_a_wrong_output_shape_or_dtype(case, change):
    args, kwargs, idx, val = case
    if change == "indices-shape":
        idx = idx.reshape(*idx.shape[:2], -1)  # the N2 axis missing
    elif change == "indices-dtype":
        idx = idx.long()
    else:
        val = val.double()
    with pytest.raises(IndexerMismatch, match="must be"):
        assert_indexer_close(idx, val, args, kwargs)


def test_accepts_a_near_tie_swap_and_exact_mode_does_not():
    args, kwargs = make_indexer_inputs(q_lens=[2], k_lens=[200], ties=True, sparse_count=50, return_value=True,
                                       scale_dtype=torch.float32, block_size=16, seed=5)
    idx, val = golden_indexer(*args, **kwargs)
    row = idx[0, 1, 0]
    second = int(row[1])
    assert val[0, 1, 0, 0] == val[0, 1, 0, 1], "expected a tie at the top"
    # nudge the second key's scale up by 1e-7: it now scores a hair above the first
    key_scale, block_table = args[4], kwargs["block_table"]
    key_scale[block_table[0, second // 16], second % 16] *= 1 + 1e-7
    swapped = golden_indexer(*args, **kwargs)[0]
    assert int(swapped[0, 1, 0, 0]) == second
    assert_indexer_close(idx, val, args, kwargs, value_rtol=1e-3)  # old order: a near-tie swap
    with pytest.raises(IndexerMismatch):
        assert_indexer_close(idx, val, args, kwargs, exact=True)


def test_values_allow_float32_rounding_of_cancelling_heads():
    """Heads of opposite weights can cancel a score to far below its terms; a float32 head sum
    knows it only to a few ulps of the terms' magnitude Σ|w·qscale|·ReLU(..)·kscale, so the
    comparison allows that much and no more (a row-relative floor alone failed the CPU
    backend on such a row; found by scripts/fuzz_indexer.py)."""
    args, kwargs = make_indexer_inputs(q_lens=[1], k_lens=[16], sparse_count=16, return_value=True,
                                       scale_dtype=torch.float32, block_size=16, seed=1)
    query, weights, qscale = args[0], args[2], args[3]
    weights.zero_()
    weights[0, 0, 0], weights[0, 0, 1] = 1.0, -1.0 + 2.0 ** -20  # the two heads nearly cancel
    qscale.fill_(1.0)
    query[0, 0, 1] = query[0, 0, 0]
    idx, val = golden_indexer(*args, **kwargs)
    (_, score, mag), = golden_scores(*args, magnitudes=True, **kwargs)
    top = int(idx[0, 0, 0, 0])
    assert 0 < score[0, top] < 1e-5 * mag[0, top]
    ulp = 2.0 ** -24 * float(mag[0, top])
    near, far = val.clone(), val.clone()
    near[0, 0, 0, 0] += 20 * ulp
    far[0, 0, 0, 0] += 400 * ulp
    assert_indexer_close(idx, near, args, kwargs)
    with pytest.raises(IndexerMismatch):
        assert_indexer_close(idx, far, args, kwargs)


def test_tie_keys_rewrites_the_cache_through_its_view():
    """The tied-scores helper of the benchmarks and offline checks: few distinct key vectors
    (each with its own scale) or mostly zero keys, written through the cache's strided view
    only; the CPU backend still gives the golden's result on it."""
    from custom_ops.testing import tie_keys
    args, kwargs = make_indexer_inputs(q_lens=[1, 1], k_lens=[3000, 700], sparse_count=256,
                                       return_value=True, seed=4)
    cache, kscale = args[1], args[4]
    base = cache._base
    assert base is not None and cache.stride(0) == 2 * base.stride(0)  # every other block
    hidden = base[1::2].clone()  # the blocks the view skips
    tie_keys(args, 3)
    rows = cache.reshape(-1, cache.shape[-1])
    assert torch.unique(rows, dim=0).shape[0] <= 3
    assert len({(tuple(r.tolist()), float(s)) for r, s in zip(rows, kscale.reshape(-1))}) <= 3
    assert torch.equal(base[1::2], hidden)
    small = make_indexer_inputs(q_lens=[1], k_lens=[20], block_size=16, seed=6)[0]
    tie_keys(small, 1000)  # more vectors asked for than the cache has slots: all it has
    tie_keys(args, 0, seed=5)
    assert 0.95 < float((cache.reshape(-1, cache.shape[-1]) == 0).all(1).float().mean())
    idx, val = torch.ops.custom.npu_vllm_quant_lightning_indexer(*args, **kwargs)
    assert_indexer_close(idx, val, args, kwargs)
