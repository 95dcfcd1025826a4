"""The golden itself: a hand-computed case, the ascend_a3 rounding mode, the tie order."""
import pytest
import torch

from custom_ops.reference import golden_indexer, golden_scores, topk_rows
from custom_ops.testing import assert_indexer_close, make_indexer_inputs


def _one_key_problem(dot_sign=1):
    """One query token, two keys; head 0 sees q·k = ±128·2·3, every other head sees 0."""
    query = torch.zeros(1, 1, 64, 128, dtype=torch.int8)
    query[0, 0, 0] = 2
    key = torch.zeros(1, 16, 1, 128, dtype=torch.int8)
    key[0, 0, 0] = 3 * dot_sign
    key[0, 1, 0] = 1
    weights = torch.full((1, 1, 64), 0.5, dtype=torch.float16)
    qscale = torch.full((1, 1, 64), 0.25, dtype=torch.float16)
    kscale = torch.full((1, 16, 1), 2.0, dtype=torch.float16)
    kw = dict(actual_seq_lengths_key=torch.tensor([2], dtype=torch.int32),
              block_table=torch.zeros(1, 1, dtype=torch.int32), sparse_count=4, sparse_mode=0,
              return_value=True)
    return (query, key, weights, qscale, kscale), kw


def test_hand_computed_scores():
    args, kw = _one_key_problem()
    idx, val = golden_indexer(*args, **kw)
    # key 0: 0.5 * relu(0.25 * 2 * 768) = 192; key 1: 0.5 * 0.25 * 2 * 256 = 64
    assert idx[0, 0, 0].tolist() == [0, 1, -1, -1]
    assert val[0, 0, 0, :2].tolist() == [192.0, 64.0]


def test_relu_drops_negative_dots():
    args, kw = _one_key_problem(dot_sign=-1)
    idx, val = golden_indexer(*args, **kw)
    assert idx[0, 0, 0].tolist() == [1, 0, -1, -1] and val[0, 0, 0, 1] == 0.0


def test_topk_rows_breaks_ties_by_index():
    scores = torch.tensor([[1.0, 3.0, 3.0, float("-inf"), 3.0]], dtype=torch.float64)
    idx, val = topk_rows(scores, 6)
    assert idx.tolist() == [[1, 2, 4, 0, -1, -1]]
    assert val[0, 4] == float("-inf")


def test_ascend_a3_mode_is_close_to_float64():
    args, kw = make_indexer_inputs(q_lens=[4], k_lens=[700], block_size=16, seed=1)
    a3 = golden_scores(*args, rounding="ascend_a3", **kw)[0][1]
    f64 = golden_scores(*args, **kw)[0][1]
    finite = f64 > float("-inf")
    assert torch.equal(finite, a3 > float("-inf"))
    err = (a3[finite] - f64[finite]).abs().max() / f64[finite].abs().max()
    assert 0 < err < 5e-3, f"relative error {err:.2e}: fp16 rounding should show, but stay small"
    idx, _ = golden_indexer(*args, rounding="ascend_a3", **kw)
    assert_indexer_close(idx, torch.empty(0), args, kw, rtol=5e-3)


def test_ascend_a3_mode_needs_int8():
    args, kw = make_indexer_inputs(q_lens=[1], k_lens=[20], qk_dtype=torch.float8_e4m3fn)
    with pytest.raises(ValueError, match="ascend_a3"):
        golden_scores(*args, rounding="ascend_a3", **kw)


def test_golden_takes_the_op_keywords_only():
    args, kwargs = make_indexer_inputs(q_lens=[1], k_lens=[50], sparse_count=8)
    with pytest.raises(TypeError, match="sparse_cnt"):
        golden_indexer(*args, **kwargs, sparse_cnt=4)
    idx, _ = golden_indexer(*args, **{k: v for k, v in kwargs.items() if k != "sparse_count"})
    assert idx.shape[-1] == 2048  # the schema's default
