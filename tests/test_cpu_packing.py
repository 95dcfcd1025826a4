"""The CPU backend's exact-selection primitive: (score, index) packed into one ordered int64."""
import torch
from hypothesis import given, settings, strategies as st

from custom_ops.backends.cpu import pack_scores, unpack_scores

finite = st.floats(allow_nan=False, allow_infinity=True, width=32)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(finite, st.integers(0, 2**32 - 1)), min_size=2, max_size=64))
def test_packed_order_is_score_descending_then_index_ascending(pairs):
    scores = torch.tensor([s for s, _ in pairs], dtype=torch.float32) + 0.0  # -0.0 -> +0.0
    index = torch.tensor([i for _, i in pairs], dtype=torch.int64)
    packed = pack_scores(scores, index)
    back_scores, back_index, hidden = unpack_scores(packed)
    assert torch.equal(back_index, index)
    assert torch.equal(back_scores, scores)
    assert not hidden.any()
    order = torch.argsort(packed, descending=True, stable=True).tolist()
    want = sorted(range(len(pairs)), key=lambda k: (-float(scores[k]), int(index[k]), k))
    assert [(float(scores[k]), int(index[k])) for k in order] == \
        [(float(scores[k]), int(index[k])) for k in want]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2**32 - 1), st.integers(0, 2**31 - 1), st.booleans()),
                min_size=2, max_size=64))
def test_visible_keys_outrank_hidden_ones_whatever_their_scores(triples):
    """Any float32 bit pattern (overflowed -inf, NaNs of either sign) of a visible key still
    ranks above every hidden key, so -1 is only ever padding; visible keys keep the bit order
    of the CUDA kernels (0x7FFFFFFF above every number, a negative NaN below -inf)."""
    bits = torch.tensor([b - (1 << 32) if b >= 1 << 31 else b for b, _, _ in triples],
                        dtype=torch.int32)
    scores = bits.view(torch.float32)
    index = torch.tensor([i for _, i, _ in triples], dtype=torch.int64)
    seen = torch.tensor([v for _, _, v in triples])
    packed = pack_scores(scores, index, seen)
    back_scores, back_index, hidden = unpack_scores(packed)
    assert torch.equal(hidden, ~seen)
    assert torch.equal(back_index, index)
    kept = seen & (bits != -1)  # (0xFFFFFFFF reads back as 0xFFFFFFFE, another NaN)
    assert torch.equal(back_scores.view(torch.int32)[kept], bits[kept])
    order = torch.argsort(packed, descending=True, stable=True)
    shown = seen[order]
    assert not (~shown[:-1] & shown[1:]).any()  # no visible key after a hidden one
    mono = torch.where(bits < 0, bits ^ 0x7FFFFFFF, bits).to(torch.int64)
    visible_mono = mono[order][shown].clamp(min=-(1 << 31) + 1)
    assert (visible_mono[:-1] >= visible_mono[1:]).all()


def test_indexer_pads_only_after_every_visible_key_whatever_the_values():
    """Weights that overflow float32 scores to -inf, or that are inf / NaN (garbage in): the
    CPU backend still returns min(sparse_count, L) indices of visible keys, then -1 (SPEC §1.4:
    -1 only where a row has no more keys to show)."""
    from custom_ops.testing import make_indexer_inputs

    op = torch.ops.custom.npu_vllm_quant_lightning_indexer
    args, kw = make_indexer_inputs(q_lens=[3, 1], k_lens=[200, 70], sparse_count=96,
                                   scale_dtype=torch.float32, return_value=True, seed=3)
    for weights, kscale in ((-args[2].abs() - 1.0, torch.full_like(args[4], 3e38)),  # -inf
                            (torch.full_like(args[2], float("inf")), args[4]),
                            (torch.full_like(args[2], float("nan")), args[4])):
        idx, val = op(args[0], args[1], weights, args[3], kscale, **kw)
        fill = float(weights.flatten()[0])
        for b, length in enumerate([200, 70]):
            for s in range(3 if b == 0 else 1):
                row = idx[b, s, 0]
                n = min(96, length - (3 - 1 - s if b == 0 else 0))  # causal: earlier tokens see less
                assert (row[:n] >= 0).all() and (row[n:] == -1).all(), (fill, b, s, row)
                assert len(set(row[:n].tolist())) == n
                assert (val[b, s, 0, n:] == float("-inf")).all()
