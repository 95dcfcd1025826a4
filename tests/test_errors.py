"""Every rule of SPEC §1.1/§2 rejected with a clear error naming the argument (SPEC §4)."""
import pytest
import torch

from custom_ops.testing import make_indexer_inputs

op = torch.ops.custom.npu_vllm_quant_lightning_indexer
meta_op = torch.ops.custom.npu_vllm_quant_lightning_indexer_metadata
Q, K, W, QS, KS = range(5)


def _set(i, fn):
    def mutate(args, kwargs):
        args[i] = fn(args[i])
    return mutate


def _kw(name, value):
    def mutate(args, kwargs):
        kwargs[name] = value(kwargs) if callable(value) else value
    return mutate


INDEXER_RULES = {
    # name: (mutation, exception, words the message must contain)
    "query-dtype": (_set(Q, lambda t: t.float()), TypeError, ["query", "float32"]),
    "key-dtype-mismatch": (_set(K, lambda t: t.to(torch.float8_e4m3fn)), TypeError, ["key", "query's dtype"]),
    "weights-dtype": (_set(W, lambda t: t.to(torch.bfloat16)), TypeError, ["weights", "bfloat16"]),
    "qscale-dtype": (_set(QS, lambda t: t.double()), TypeError, ["query_dequant_scale", "float64"]),
    "kscale-dtype-mismatch": (_set(KS, lambda t: t.float()), TypeError, ["key_dequant_scale", "float32"]),
    "query-rank": (_set(Q, lambda t: t[0]), ValueError, ["query", "[B, S1, N1, D]"]),
    "query-heads": (_set(Q, lambda t: t[:, :, :32]), ValueError, ["query", "N1=32"]),
    "query-dim": (_set(Q, lambda t: t[..., :64]), ValueError, ["query", "D=64"]),
    "key-heads": (_set(K, lambda t: t.expand(-1, -1, 2, -1)), ValueError, ["key", "N2=2"]),
    "key-block-size": (_set(K, lambda t: t[:, :8]), ValueError, ["key", "block_size=8"]),
    "key-inner-stride": (_set(K, lambda t: torch.cat([t, t], -1)[..., ::2]), ValueError,
                         ["key", "strides"]),
    "weights-shape": (_set(W, lambda t: t[:, :1]), ValueError, ["weights", "shape"]),
    "kscale-shape": (_set(KS, lambda t: t[:, :8]), ValueError, ["key_dequant_scale", "shape"]),
    "layout-query": (_kw("layout_query", "BNSD"), ValueError, ["layout_query", "'BNSD'"]),
    "layout-key": (_kw("layout_key", "BSND"), ValueError, ["layout_key", "'BSND'"]),
    "sparse-count-big": (_kw("sparse_count", 4096), ValueError, ["sparse_count", "[1, 2048]", "4096"]),
    "sparse-count-zero": (_kw("sparse_count", 0), ValueError, ["sparse_count", "0"]),
    "sparse-mode": (_kw("sparse_mode", 1), ValueError, ["sparse_mode", "1"]),
    "cmp-ratio-not-pow2": (_kw("cmp_ratio", 3), ValueError, ["cmp_ratio", "power of two", "3"]),
    "cmp-ratio-big": (_kw("cmp_ratio", 256), ValueError, ["cmp_ratio", "256"]),
    "query-quant-mode": (_kw("query_quant_mode", 1), ValueError, ["query_quant_mode"]),
    "key-quant-mode": (_kw("key_quant_mode", 2), ValueError, ["key_quant_mode"]),
    "pre-tokens": (_kw("pre_tokens", 100), ValueError, ["pre_tokens", "100"]),
    "next-tokens": (_kw("next_tokens", 0), ValueError, ["next_tokens"]),
    "key-lengths-missing": (_kw("actual_seq_lengths_key", None), ValueError, ["actual_seq_lengths_key", "required"]),
    "key-lengths-dtype": (_kw("actual_seq_lengths_key", lambda kw: kw["actual_seq_lengths_key"].long()),
                          TypeError, ["actual_seq_lengths_key", "int64"]),
    "key-lengths-size": (_kw("actual_seq_lengths_key", lambda kw: kw["actual_seq_lengths_key"][:1]),
                         ValueError, ["actual_seq_lengths_key", "elements"]),
    "key-lengths-negative": (_kw("actual_seq_lengths_key", lambda kw: -kw["actual_seq_lengths_key"]),
                             ValueError, ["actual_seq_lengths_key", "non-negative"]),
    "key-lengths-past-table": (_kw("actual_seq_lengths_key", lambda kw: kw["actual_seq_lengths_key"] * 50),
                               ValueError, ["actual_seq_lengths_key", "block table"]),
    "query-lengths-past-s1": (_kw("actual_seq_lengths_query", lambda kw: kw["actual_seq_lengths_query"] + 9),
                              ValueError, ["actual_seq_lengths_query", "S1"]),
    "block-table-missing": (_kw("block_table", None), ValueError, ["block_table", "required"]),
    "block-table-rank": (_kw("block_table", lambda kw: kw["block_table"][0]), ValueError, ["block_table", "2-D"]),
    "block-table-dtype": (_kw("block_table", lambda kw: kw["block_table"].long()), TypeError, ["block_table"]),
    "block-table-entry": (_kw("block_table", lambda kw: kw["block_table"] + 1000), ValueError,
                          ["block_table", "entry"]),
    "qscale-shape": (_set(QS, lambda t: t[:, :1]), ValueError, ["query_dequant_scale", "shape"]),
    "key-rank": (_set(K, lambda t: t[:, :, 0]), ValueError, ["key", "[num_blocks, block_size, N2, D]"]),
    "key-dim": (_set(K, lambda t: t[..., :64].contiguous()), ValueError, ["key", "D=64"]),
    "key-block-size-big": (_set(K, lambda t: t.repeat(1, 128, 1, 1)), ValueError, ["key", "block_size=2048"]),
    "key-block-size-24": (_set(K, lambda t: t.repeat(1, 2, 1, 1)[:, :24]), ValueError, ["key", "block_size=24"]),
    "kscale-inner-stride": (_set(KS, lambda t: torch.cat([t, t], -1)[..., :1]), ValueError,
                            ["key_dequant_scale", "strides"]),
    "block-table-batch": (_kw("block_table", lambda kw: kw["block_table"][:1]), ValueError, ["block_table", "B=2"]),
    "block-table-negative": (_kw("block_table", lambda kw: kw["block_table"] - 1000), ValueError,
                             ["block_table", "entry"]),
    "query-lengths-negative": (_kw("actual_seq_lengths_query", lambda kw: -kw["actual_seq_lengths_query"]),
                               ValueError, ["actual_seq_lengths_query", "non-negative"]),
    "query-lengths-size": (_kw("actual_seq_lengths_query", lambda kw: kw["actual_seq_lengths_query"][:1]),
                           ValueError, ["actual_seq_lengths_query", "elements"]),
    "metadata-shape": (_kw("metadata", torch.zeros(16, dtype=torch.int32)), ValueError, ["metadata", "[1024]"]),
    "metadata-format": (_kw("metadata", torch.zeros(1024, dtype=torch.int32)), ValueError,
                        ["metadata", "format"]),
}


def _inputs(layout="BSND"):
    args, kwargs = make_indexer_inputs(q_lens=[3, 2], k_lens=[100, 60], layout=layout, block_size=16)
    return list(args), dict(kwargs)


@pytest.mark.parametrize("rule", list(INDEXER_RULES))
def test_indexer_rule(rule):
    mutate, exc, words = INDEXER_RULES[rule]
    args, kwargs = _inputs()
    mutate(args, kwargs)
    with pytest.raises(exc) as info:
        op(*args, **kwargs)
    for word in words:
        assert word in str(info.value), f"message {str(info.value)!r} lacks {word!r}"


TND_RULES = {
    "tnd-query-lengths-missing": (_kw("actual_seq_lengths_query", None), ["actual_seq_lengths_query", "TND"]),
    "tnd-not-cumulative": (_kw("actual_seq_lengths_query", lambda kw: kw["actual_seq_lengths_query"].flip(0)),
                           ["actual_seq_lengths_query", "non-decreasing"]),
    "tnd-past-t": (_kw("actual_seq_lengths_query", lambda kw: kw["actual_seq_lengths_query"] + 100),
                   ["actual_seq_lengths_query", "T ="]),
    "tnd-query-rank": (_set(Q, lambda t: t[None]), ["query", "[T, N1, D]"]),
    "tnd-b-plus-one-not-from-zero": (
        _kw("actual_seq_lengths_query", lambda kw: torch.cat([kw["actual_seq_lengths_query"][:1],
                                                               kw["actual_seq_lengths_query"]])),
        ["actual_seq_lengths_query", "start at 0"]),
    "tnd-query-lengths-size": (_kw("actual_seq_lengths_query", lambda kw: kw["actual_seq_lengths_query"][:1]),
                               ["actual_seq_lengths_query", "elements"]),
    "tnd-key-lengths-rank": (_kw("actual_seq_lengths_key", lambda kw: kw["actual_seq_lengths_key"][None]),
                             ["actual_seq_lengths_key", "1-D [B]"]),
}


@pytest.mark.parametrize("rule", list(TND_RULES))
def test_indexer_tnd_rule(rule):
    mutate, words = TND_RULES[rule]
    args, kwargs = _inputs("TND")
    mutate(args, kwargs)
    with pytest.raises(ValueError) as info:
        op(*args, **kwargs)
    for word in words:
        assert word in str(info.value), f"message {str(info.value)!r} lacks {word!r}"


def test_metadata_of_another_backend_is_rejected():
    args, kwargs = _inputs()
    meta = meta_op(actual_seq_lengths_query=kwargs["actual_seq_lengths_query"],
                   actual_seq_lengths_key=kwargs["actual_seq_lengths_key"], num_heads_q=64,
                   num_heads_k=1, head_dim=128, max_seqlen_q=3, device="cpu")
    meta[1] = 2  # the CUDA backend's id
    with pytest.raises(ValueError, match="metadata was computed for backend 'cuda'"):
        op(*args, metadata=meta, **kwargs)


def test_metadata_of_another_mode_is_rejected():
    args, kwargs = _inputs()
    meta = meta_op(actual_seq_lengths_query=kwargs["actual_seq_lengths_query"],
                   actual_seq_lengths_key=kwargs["actual_seq_lengths_key"], num_heads_q=64,
                   num_heads_k=1, head_dim=128, max_seqlen_q=3, sparse_mode=0, device="cpu")
    with pytest.raises(ValueError, match="sparse_mode 0"):
        op(*args, metadata=meta, **kwargs)


@pytest.mark.parametrize("change,words", [
    (dict(cmp_ratio=4), "cmp_ratio 4"),
    (dict(layout_query="TND", actual_seq_lengths_query=torch.tensor([3, 5], dtype=torch.int32)), "layout_query 1"),
    (dict(actual_seq_lengths_key=torch.tensor([100], dtype=torch.int32),
          actual_seq_lengths_query=torch.tensor([3], dtype=torch.int32)), "batch size 1"),
], ids=["cmp-ratio", "layout", "batch"])
def test_metadata_of_another_call_is_rejected(change, words):
    args, kwargs = _inputs()
    meta = meta_op(**{**dict(actual_seq_lengths_query=kwargs["actual_seq_lengths_query"],
                             actual_seq_lengths_key=kwargs["actual_seq_lengths_key"], num_heads_q=64,
                             num_heads_k=1, head_dim=128, max_seqlen_q=3, device="cpu"), **change})
    with pytest.raises(ValueError, match=words):
        op(*args, metadata=meta, **kwargs)


def _meta_kwargs():
    return dict(actual_seq_lengths_query=torch.tensor([2, 3], dtype=torch.int32),
                actual_seq_lengths_key=torch.tensor([90, 40], dtype=torch.int32),
                num_heads_q=64, num_heads_k=1, head_dim=128, max_seqlen_q=3, device="cpu")


METADATA_RULES = {
    "num-heads-q": (dict(num_heads_q=32), ValueError, ["num_heads_q", "32"]),
    "num-heads-k": (dict(num_heads_k=2), ValueError, ["num_heads_k"]),
    "head-dim": (dict(head_dim=64), ValueError, ["head_dim", "64"]),
    "batch-size": (dict(batch_size=5), ValueError, ["batch_size", "5"]),
    "negative-max-seqlen": (dict(max_seqlen_q=-1), ValueError, ["max_seqlen_q"]),
    "huge-max-seqlen": (dict(max_seqlen_q=2**40), ValueError, ["max_seqlen_q", str(2**40), "int32"]),
    "sparse-count": (dict(sparse_count=9999), ValueError, ["sparse_count", "9999"]),
    "cmp-ratio": (dict(cmp_ratio=5), ValueError, ["cmp_ratio", "5"]),
    "key-lengths-missing": (dict(actual_seq_lengths_key=None), ValueError, ["actual_seq_lengths_key"]),
    "key-lengths-dtype": (dict(actual_seq_lengths_key=torch.tensor([9, 4])), TypeError,
                          ["actual_seq_lengths_key", "int64"]),
    "query-lengths-size": (dict(actual_seq_lengths_query=torch.tensor([1, 2, 3, 4], dtype=torch.int32)),
                           ValueError, ["actual_seq_lengths_query", "elements"]),
    "tnd-needs-query-lengths": (dict(layout_query="TND", actual_seq_lengths_query=None), ValueError,
                                ["actual_seq_lengths_query", "TND"]),
    "bsnd-needs-max-seqlen-q": (dict(actual_seq_lengths_query=None, max_seqlen_q=0), ValueError,
                                ["max_seqlen_q", "> 0"]),
    "unknown-device": (dict(device="npu:0"), ValueError, ["device", "npu"]),
    "wrong-device": (dict(device="meta"), ValueError, ["must be on device"]),
}


@pytest.mark.parametrize("rule", list(METADATA_RULES))
def test_metadata_rule(rule):
    change, exc, words = METADATA_RULES[rule]
    if rule == "unknown-device" and hasattr(torch, "npu"):
        pytest.skip("torch_npu is loaded: 'npu' is a known device here")
    with pytest.raises(exc) as info:
        meta_op(**{**_meta_kwargs(), **change})
    for word in words:
        assert word in str(info.value), f"message {str(info.value)!r} lacks {word!r}"


def test_size_one_axes_may_carry_any_stride():
    """torch calls such tensors contiguous, so they are accepted (a stride on N2 = 1, or on the
    key scales' trailing axis, means nothing)."""
    args, kwargs = _inputs()
    key, kscale = args[K], args[KS]
    args[K] = key.as_strided(key.shape, (*key.stride()[:2], 1, 1))
    args[KS] = kscale.as_strided(kscale.shape, (*kscale.stride()[:2], 7))
    assert args[K].stride() != key.stride() and args[KS].stride() != kscale.stride()
    want = op(*_inputs()[0], **kwargs)
    got = op(*args, **kwargs)
    assert all(torch.equal(g, w) for g, w in zip(got, want))


def test_meta_tensors_mixed_with_others_are_rejected():
    """A call mixing meta tensors with CPU ones dispatches to the fake, which checks too."""
    args, kwargs = _inputs()
    args[W] = args[W].to("meta")
    with pytest.raises(ValueError, match="weights.*must be on the query's device"):
        op(*args, **kwargs)


def _meta_for(kwargs, ask, max_seqlen_q=3, device="cpu"):
    return meta_op(actual_seq_lengths_query=kwargs["actual_seq_lengths_query"],
                   actual_seq_lengths_key=ask, num_heads_q=64, num_heads_k=1, head_dim=128,
                   max_seqlen_q=max_seqlen_q, device=device)


def test_metadata_device_with_an_index_accepts_cpu_tensors():
    _, kwargs = _inputs()
    meta = _meta_for(kwargs, kwargs["actual_seq_lengths_key"], device="cpu:0")
    assert meta.device.type == "cpu"


@pytest.mark.parametrize("factor", [0.25, 4.0], ids=["shorter", "longer"])
def test_metadata_of_other_key_lengths_is_rejected(factor):
    """A schedule of another step's lengths would leave keys unscored or name work the call
    does not have (SPEC §2): the host check walks its runs against this call's units."""
    args, kwargs = make_indexer_inputs(q_lens=[3, 2], k_lens=[9000, 3000])  # CPU units: 8192 keys
    ask = kwargs["actual_seq_lengths_key"]
    other = (ask.double() * factor).to(torch.int32)
    assert op(*args, metadata=_meta_for(kwargs, ask), **kwargs)[0] is not None
    with pytest.raises(ValueError, match="does not split this call's work"):
        op(*args, metadata=_meta_for(kwargs, other), **kwargs)


def test_metadata_with_a_corrupt_block_size_is_a_value_error():
    from custom_ops import metadata as md
    args, kwargs = _inputs()
    meta = _meta_for(kwargs, kwargs["actual_seq_lengths_key"])
    meta[md.F_KBLOCK] = 0
    with pytest.raises(ValueError, match="k_block > 0"):
        op(*args, metadata=meta, **kwargs)
