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
    back_scores, back_index = unpack_scores(packed)
    assert torch.equal(back_index, index)
    assert torch.equal(back_scores, scores)
    order = torch.argsort(packed, descending=True, stable=True).tolist()
    want = sorted(range(len(pairs)), key=lambda k: (-float(scores[k]), int(index[k]), k))
    assert [(float(scores[k]), int(index[k])) for k in order] == \
        [(float(scores[k]), int(index[k])) for k in want]

