"""npu_vllm_quant_lightning_indexer against the golden (SPEC §1), on every backend present."""
import itertools

import pytest
import torch
from hypothesis import HealthCheck, given, settings, strategies as st

from custom_ops.examples import seed_inputs, single_op
from custom_ops.testing import IndexerMismatch, assert_indexer_close, make_indexer_inputs

op = torch.ops.custom.npu_vllm_quant_lightning_indexer
DTYPES = {"int8": (torch.int8, torch.float16), "int8f32": (torch.int8, torch.float32),
          "fp8": (torch.float8_e4m3fn, torch.float32), "fp8f16": (torch.float8_e4m3fn, torch.float16)}


def run(device, args, kwargs, poison=True):
    """Call the op on `device`; CUDA/NPU memory is poisoned first so unwritten outputs show."""
    if poison and device != "cpu":
        torch.empty(1 << 24, dtype=torch.int32, device=device).fill_(0x7F7F7F7F)
    return op(*args, **kwargs)


def check(device, exact=False, **case):
    args, kwargs = make_indexer_inputs(device=device, **case)
    idx, val = run(device, args, kwargs)
    assert idx.dtype == torch.int32 and idx.device.type == device
    assert_indexer_close(idx, val, args, kwargs, exact=exact, rtol=0 if exact else 1e-5)
    return idx, val


def _sweep():
    """Every layout × mode × cmp_ratio, with block size, dtype, return_value and k cycling."""
    blocks = [16, 64, 128, 1024]
    for i, (layout, mode, cmp) in enumerate(itertools.product(
            ["BSND", "TND", "TND+1"], [0, 3], [1, 2, 4, 8, 128])):
        dtype = list(DTYPES)[i % 4]
        bs = blocks[i % 4]
        q_lens = [3, 1, 0, 4][: 2 + i % 3]
        k_lens = [700 * cmp // 4 + 37, 5, 300 * min(cmp, 8), 0][: len(q_lens)]
        k_lens = [min(k, 2900 * cmp) for k in k_lens]
        k = [2048, 100, 7, 513][i % 4]
        tag = f"{layout}-b{len(q_lens)}-s1_{max(q_lens)}-ctx{max(k_lens)}-cmp{cmp}-mode{mode}-bs{bs}-k{k}-{dtype}"
        yield pytest.param(dict(layout=layout, mode=mode, cmp=cmp, dtype=dtype, bs=bs, q_lens=q_lens,
                                k_lens=k_lens, k=k, rv=i % 2 == 0, seed=i), id=tag)


@pytest.mark.parametrize("c", list(_sweep()))
def test_sweep(device, c):
    qk, sc = DTYPES[c["dtype"]]
    layout = c["layout"].split("+")[0]
    check(device, q_lens=c["q_lens"], k_lens=c["k_lens"], layout=layout,
          leading_zero=c["layout"].endswith("+1"), s1=5, t_pad=2, block_size=c["bs"], qk_dtype=qk,
          scale_dtype=sc, cmp_ratio=c["cmp"], sparse_mode=c["mode"], sparse_count=c["k"],
          return_value=c["rv"], seed=c["seed"])


CORNERS = {
    "all-zero-lengths": dict(q_lens=[0, 0], k_lens=[0, 0]),
    "zero-keys": dict(q_lens=[4, 2], k_lens=[0, 64]),
    "causal-nothing-visible": dict(q_lens=[8], k_lens=[3], sparse_mode=3),  # first rows see L <= 0
    "cmp128-under-one-key": dict(q_lens=[2], k_lens=[127], cmp_ratio=128),
    "k-larger-than-visible": dict(q_lens=[4], k_lens=[50], sparse_count=2048),
    "k1": dict(q_lens=[4, 3], k_lens=[900, 17], sparse_count=1),
    "k2048-ctx3000": dict(q_lens=[2], k_lens=[3000], sparse_count=2048, block_size=128),
    "bsnd-no-query-lengths": dict(q_lens=[4, 4], k_lens=[400, 90], pass_q_lens=False),
    "tnd-padding-rows": dict(q_lens=[2, 3], k_lens=[200, 70], layout="TND", t_pad=5),
    "contiguous-key": dict(q_lens=[3], k_lens=[333], strided_key=False),
    "block1024-ragged": dict(q_lens=[1, 4, 2], k_lens=[2100, 1, 1025], block_size=1024),
    "values-padding": dict(q_lens=[3], k_lens=[10], sparse_count=64, return_value=True),
    # 280 causal rows of which only the last few see a key: row groups of different widths
    "values-of-rows-seeing-nothing": dict(q_lens=[280], k_lens=[64], cmp_ratio=64,
                                          return_value=True),
}


@pytest.mark.parametrize("case", list(CORNERS.values()), ids=list(CORNERS))
def test_corner(device, case):
    case = {"sparse_count": 256, **case}
    check(device, **case)


@pytest.mark.parametrize("layout", ["BSND", "TND"])
@pytest.mark.parametrize("cmp", [1, 4])
def test_ties_exact(device, layout, cmp):
    """Integer inputs make every backend's arithmetic exact: the order must be the golden's,
    with equal scores ordered by index (SPEC §1.4)."""
    idx, val = check(device, exact=True, q_lens=[3, 4], k_lens=[700, 300], layout=layout,
                     ties=True, cmp_ratio=cmp, sparse_count=150, return_value=True, block_size=16)
    tied = torch.isfinite(val[..., :-1]) & (val[..., :-1] == val[..., 1:])
    assert tied.any(), "the inputs were meant to contain ties"


def test_nothing_visible_rows_are_all_padding(device):
    args, kwargs = make_indexer_inputs(q_lens=[8], k_lens=[3], sparse_count=16, return_value=True,
                                       device=device)
    idx, val = run(device, args, kwargs)
    # causal: token s sees floor(3 - 8 + s + 1) keys, so s < 5 sees none
    assert (idx[0, :5] == -1).all() and (val[0, :5] == float("-inf")).all()
    assert (idx[0, 5, 0, :1] >= 0).all() and (idx[0, 5, 0, 1:] == -1).all()


@pytest.mark.parametrize("ties", [False, True], ids=["random", "ties"])
def test_deterministic(device, ties):
    args, kwargs = make_indexer_inputs(q_lens=[4, 2, 3], k_lens=[3000, 1200, 64], ties=ties,
                                       return_value=True, device=device)
    ref = run(device, args, kwargs)
    if ties:  # an unstable tie order can only show where equal scores exist
        assert (torch.isfinite(ref[1][..., :-1]) & (ref[1][..., :-1] == ref[1][..., 1:])).any()
    for _ in range(5):
        out = run(device, args, kwargs)
        assert torch.equal(out[0], ref[0]) and torch.equal(out[1], ref[1])


def test_metadata_given_equals_none(device):
    args, kwargs = make_indexer_inputs(q_lens=[4, 2], k_lens=[1500, 300], device=device)
    meta = torch.ops.custom.npu_vllm_quant_lightning_indexer_metadata(
        actual_seq_lengths_query=kwargs["actual_seq_lengths_query"],
        actual_seq_lengths_key=kwargs["actual_seq_lengths_key"], num_heads_q=64, num_heads_k=1,
        head_dim=128, batch_size=2, max_seqlen_q=4, sparse_count=2048, sparse_mode=3,
        device=device)
    with_meta = op(*args, metadata=meta, **kwargs)
    without = op(*args, **kwargs)
    assert torch.equal(with_meta[0], without[0])


@pytest.mark.slow
@pytest.mark.parametrize("dtype", ["int8", "fp8"])
def test_long_context_64k(device, dtype):
    qk, sc = DTYPES[dtype]
    check(device, q_lens=[4, 4], k_lens=[65536, 40000], block_size=128, qk_dtype=qk, scale_dtype=sc)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_property(device, data):
    """Random valid configurations: the backend agrees with the golden."""
    batch = data.draw(st.integers(1, 4), label="batch")
    layout = data.draw(st.sampled_from(["BSND", "TND"]), label="layout")
    cmp = data.draw(st.sampled_from([1, 2, 4, 8, 16, 32, 64, 128]), label="cmp_ratio")
    q_lens = data.draw(st.lists(st.integers(0, 6), min_size=batch, max_size=batch), label="q_lens")
    k_lens = data.draw(st.lists(st.integers(0, 600 * min(cmp, 4)), min_size=batch, max_size=batch),
                       label="k_lens")
    dtype = data.draw(st.sampled_from(list(DTYPES)), label="dtype")
    qk, sc = DTYPES[dtype]
    check(device, q_lens=q_lens, k_lens=k_lens, layout=layout, cmp_ratio=cmp,
          leading_zero=layout == "TND" and data.draw(st.booleans(), label="leading_zero"),
          block_size=data.draw(st.sampled_from([16, 32, 64, 128, 256]), label="block_size"),
          sparse_mode=data.draw(st.sampled_from([0, 3]), label="sparse_mode"),
          sparse_count=data.draw(st.integers(1, 300), label="sparse_count"),
          return_value=data.draw(st.booleans(), label="return_value"),
          qk_dtype=qk, scale_dtype=sc, seed=data.draw(st.integers(0, 2**16), label="seed"))


def test_seed_example(device):
    """The operator doc's first example as written (B=24, S1=4, S2=512, block 128, metadata op
    then indexer) agrees with the golden."""
    args, kwargs = seed_inputs(device)
    idx, _ = single_op(device, args, kwargs)
    assert_indexer_close(idx, torch.empty(0), args, kwargs)


def test_causal_visible_counts_by_enumeration(device):
    """SPEC §1.3 counted key by key, independently of the shared mask helper: compressed key j is
    visible to token s iff (j + 1) · cmp_ratio <= S2 - S1 + s + 1."""
    for s1, s2, cmp in [(2, 11, 4), (5, 37, 8), (3, 130, 128), (4, 9, 2)]:
        args, kwargs = make_indexer_inputs(q_lens=[s1], k_lens=[s2], cmp_ratio=cmp, sparse_count=64,
                                           sparse_mode=3, block_size=16, device=device)
        idx = run(device, args, kwargs)[0].cpu()
        for s in range(s1):
            want = sum((j + 1) * cmp <= s2 - s1 + s + 1 for j in range(s2 // cmp))
            row = idx[0, s, 0]
            assert sorted(row[row >= 0].tolist()) == list(range(want)), (s1, s2, cmp, s)


def test_prefill_longer_than_one_row_chunk(device):
    check(device, q_lens=[300, 5], k_lens=[700, 40], sparse_count=64, block_size=16)


def test_zero_scores_of_both_signs_tie_by_index(device):
    """Key 0 scores -0.0 (a negative head sum times key scale 0), key 1 +0.0: equal scores, so
    index order: [2, 0, 1]. A backend that lets -0.0 sort below +0.0 returns [2, 1, 0]."""
    q = torch.zeros(1, 1, 64, 128, dtype=torch.int8)
    q[0, 0, 0, 0] = q[0, 0, 1, 1] = 1
    k = torch.zeros(1, 16, 1, 128, dtype=torch.int8)
    k[0, 0, 0, 1] = k[0, 1, 0, 0] = k[0, 2, 0, 0] = 5
    w = torch.zeros(1, 1, 64, dtype=torch.float16)
    w[0, 0, 0], w[0, 0, 1] = 1, -1
    qs = torch.ones(1, 1, 64, dtype=torch.float16)
    ks = torch.zeros(1, 16, 1, dtype=torch.float16)
    ks[0, 2] = 1
    kwargs = dict(actual_seq_lengths_key=torch.tensor([3], dtype=torch.int32),
                  block_table=torch.zeros(1, 1, dtype=torch.int32), sparse_count=3, sparse_mode=0)
    args = [t.to(device) for t in (q, k, w, qs, ks)]
    idx, _ = run(device, args, {n: t.to(device) if torch.is_tensor(t) else t for n, t in kwargs.items()})
    assert idx[0, 0, 0].tolist() == [2, 0, 1]


def test_nan_scores_at_sampled_keys_give_distinct_indices(device):
    """SPEC says nothing of NaN inputs, but a NaN must not cost an index's uniqueness. 1,500
    NaN key scales at every 16th key of a 64K row: the keys a long row's threshold samples, so
    its t0 lands on the NaN score itself while fewer than k keys share it. The scales are
    0x7FFFFFFF, the NaN that NVIDIA arithmetic returns, whose int32 order key is the largest
    there is (no key lies above it; the Triton interpreter keeps the payload, so it shows the
    same). The k indices must be distinct, the NaN keys among them (a NaN orders above every
    number in every backend)."""
    args, kwargs = make_indexer_inputs(q_lens=[1], k_lens=[65536], block_size=64,
                                       scale_dtype=torch.float32, sparse_count=2048,
                                       device=device)
    nan_keys = torch.arange(0, 1500 * 16, 16)
    table = kwargs["block_table"][0].cpu()
    nan = torch.tensor(0x7FFFFFFF, dtype=torch.int32).view(torch.float32)
    args[4][table[nan_keys // 64].to(device), (nan_keys % 64).to(device)] = nan.to(device)
    idx = run(device, args, kwargs)[0][0, 0, 0].cpu()
    assert (idx >= 0).all() and len(set(idx.tolist())) == 2048, "duplicate or missing indices"
    assert set(nan_keys.tolist()) <= set(idx.tolist())


def test_comparison_is_live(device):
    """Guard against a comparison that cannot fail: a corrupted output must be rejected."""
    args, kwargs = make_indexer_inputs(q_lens=[4], k_lens=[500], sparse_count=64, device=device)
    idx, val = run(device, args, kwargs)
    bad = idx.clone()
    bad[0, 3, 0, 0] = bad[0, 3, 0, 63]
    with pytest.raises(IndexerMismatch):
        assert_indexer_close(bad, val, args, kwargs)
