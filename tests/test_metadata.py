"""npu_vllm_quant_lightning_indexer_metadata: the format v1 schedule (SPEC §2)."""
import pytest
import torch
from hypothesis import HealthCheck, given, settings, strategies as st

from custom_ops import metadata as md
from schedule_oracle import walk

meta_op = torch.ops.custom.npu_vllm_quant_lightning_indexer_metadata


def _compute(params, q_lens, k_lens, layout, mode, cmp, max_s1, leading_zero=False):
    if layout == "TND":
        cum = torch.cumsum(torch.tensor(q_lens, dtype=torch.int64), 0)
        asq = torch.cat([torch.zeros(1, dtype=torch.int64), cum]) if leading_zero else cum
    else:
        asq = torch.tensor(q_lens)
    return md.compute(params, asq.to(torch.int32), torch.tensor(k_lens, dtype=torch.int32),
                      batch=len(k_lens), max_seqlen_q=max_s1, layout_query=layout,
                      sparse_count=2048, sparse_mode=mode, cmp_ratio=cmp, device="cpu")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_split_covers_every_unit_once_and_balances(data):
    batch = data.draw(st.integers(1, 6))
    q_lens = data.draw(st.lists(st.integers(0, 40), min_size=batch, max_size=batch))
    k_lens = data.draw(st.lists(st.integers(0, 20000), min_size=batch, max_size=batch))
    layout = data.draw(st.sampled_from(["BSND", "TND"]))
    mode = data.draw(st.sampled_from([0, 3]))
    cmp = data.draw(st.sampled_from([1, 4, 128]))
    params = md.SplitParams(md.BACKEND_CUDA, data.draw(st.integers(1, md.MAX_WORKERS)),
                            data.draw(st.sampled_from([0, 1, 4, 16])), data.draw(st.sampled_from([64, 2048])))
    max_s1 = max(q_lens)
    meta = _compute(params, q_lens, k_lens, layout, mode, cmp, max_s1,
                    leading_zero=data.draw(st.booleans()))
    sched = md.decode(meta)
    order, per_worker = walk(sched, q_lens, k_lens, layout, mode, cmp, max_s1)
    assert sched.total_units == len(order)
    assert [u for w in per_worker for u in w] == order  # each unit exactly once, in order
    counts = [len(w) for w in per_worker]
    assert max(counts) - min(counts) <= 1, counts  # equal-cost units: balanced to one unit
    assert (meta[md.HEADER_LEN + md.RECORD_LEN * sched.num_workers:] == 0).all()


def _asq(q_lens, layout, leading_zero=False):
    if layout == "BSND":
        return torch.tensor(q_lens, dtype=torch.int32)
    cum = torch.cumsum(torch.tensor(q_lens, dtype=torch.int64), 0)
    return (torch.cat([torch.zeros(1, dtype=torch.int64), cum]) if leading_zero else cum).to(torch.int32)


@settings(max_examples=80, deadline=None)
@given(data=st.data())
def test_check_covers_accepts_a_call_s_own_split_and_refuses_other_lengths(data):
    """What the eager host checks (CPU, CUDA) demand of a caller's metadata: its runs split
    exactly this call's units. A split of the call's own lengths passes (also one made for a
    larger max_seqlen_q); one of other key lengths passes only if every row keeps its unit count;
    one whose query blocks end before a sequence's tokens is refused."""
    batch = data.draw(st.integers(1, 5))
    q_lens = data.draw(st.lists(st.integers(0, 200), min_size=batch, max_size=batch))
    k_lens = data.draw(st.lists(st.integers(0, 20000), min_size=batch, max_size=batch))
    layout = data.draw(st.sampled_from(["BSND", "TND"]))
    leading_zero = layout == "TND" and data.draw(st.booleans())
    mode, cmp = data.draw(st.sampled_from([0, 3])), data.draw(st.sampled_from([1, 4]))
    q_block = data.draw(st.sampled_from([0, 16, 64]))
    params = md.SplitParams(md.BACKEND_CUDA, data.draw(st.integers(1, 40)), q_block, 512)
    max_s1 = max(q_lens) if layout == "BSND" else sum(q_lens)  # S1 or T: what the call has
    asq, ask = _asq(q_lens, layout, leading_zero), torch.tensor(k_lens, dtype=torch.int32)

    def covers(meta_q_lens, meta_k_lens, max_seqlen_q):
        meta = _compute(params, meta_q_lens, meta_k_lens, layout, mode, cmp, max_seqlen_q,
                        leading_zero)
        try:
            md.check_covers(md.decode(meta), asq, ask, layout_query=layout, max_s1=max_s1)
            return True
        except ValueError:
            return False
    longest = max(q_lens)
    assert covers(q_lens, k_lens, longest)
    assert covers(q_lens, k_lens, longest + data.draw(st.integers(0, 300)))
    other = list(k_lens)
    other[data.draw(st.integers(0, batch - 1))] += data.draw(st.integers(1, 3000))

    def units(keys):  # every row's units for these key lengths (one more key never removes one)
        blocks = -(-max_s1 // q_block) if q_block else 1
        return md._row_units(md.query_lengths(asq, batch, layout, max_s1),
                             torch.tensor(keys, dtype=torch.int64), q_block, blocks, 512, cmp, mode)
    assert covers(q_lens, other, longest) == torch.equal(units(other), units(k_lens))
    if q_block and longest > q_block:  # metadata made for one query block of tokens
        past = units(k_lens).reshape(batch, -1)[:, 1:].any()  # work in the blocks it leaves out
        assert covers(q_lens, k_lens, q_block) == (not past)


def test_header_fields():
    meta = _compute(md.SplitParams(md.BACKEND_CPU, 3, 4, 2048), [4, 2], [9000, 0], "BSND", 3, 4, 4)
    sched = md.decode(meta)
    assert (sched.backend, sched.num_workers, sched.q_block, sched.k_block, sched.batch) == (1, 3, 4, 2048, 2)
    assert (sched.q_blocks, sched.sparse_mode, sched.cmp_ratio, sched.layout_query) == (1, 3, 4, 0)
    assert sched.total_units == 2  # 9000 // 4 = 2250 keys -> 2 blocks of 2048; batch 1 has none


def test_long_single_sequence_spreads_over_all_workers():
    meta = _compute(md.SplitParams(md.BACKEND_CUDA, 132, 4, 512), [1], [131072], "BSND", 3, 1, 1)
    sched = md.decode(meta)
    assert all(w[3] >= 1 for w in sched.workers)


def test_zero_lengths_give_no_work():
    sched = md.decode(_compute(md.SplitParams(md.BACKEND_CUDA, 8, 4, 512), [0, 0], [0, 0], "BSND", 3, 1, 4))
    assert sched.total_units == 0 and all(w[3] == 0 for w in sched.workers)


def test_op_on_device(device):
    asq = torch.tensor([1, 4, 2], dtype=torch.int32, device=device)
    ask = torch.tensor([70000, 300, 0], dtype=torch.int32, device=device)
    meta = meta_op(actual_seq_lengths_query=asq, actual_seq_lengths_key=ask, num_heads_q=64,
                   num_heads_k=1, head_dim=128, batch_size=3, max_seqlen_q=4, device=device)
    assert meta.dtype == torch.int32 and meta.shape == (1024,) and meta.device.type == device
    sched = md.decode(meta)
    assert md.BACKEND_NAMES[sched.backend] == device
    order, per_worker = walk(sched, [1, 4, 2], [70000, 300, 0], "BSND", 3, 1, 4)
    assert [u for w in per_worker for u in w] == order


def test_op_without_device_computes_where_the_key_lengths_are(device):
    """`device` left out: the real kernel and the fake (meta tensors) both follow the lengths."""
    for dev in (device, "meta"):
        ask = torch.tensor([7000, 300], dtype=torch.int32, device=dev)
        meta = meta_op(actual_seq_lengths_query=None, actual_seq_lengths_key=ask, num_heads_q=64,
                       num_heads_k=1, head_dim=128, max_seqlen_q=1)
        assert meta.device.type == dev and meta.shape == (1024,)


def test_fake_output_device_is_the_real_one():
    """A CPU device named with an index ("cpu:1"): the CPU backend computes on "cpu", and the
    fake (what a traced graph sees) must say the same."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    lengths = (torch.tensor([1, 2], dtype=torch.int32), torch.tensor([70, 300], dtype=torch.int32))
    kw = dict(num_heads_q=64, num_heads_k=1, head_dim=128, max_seqlen_q=2, device="cpu:1")
    real = meta_op(actual_seq_lengths_query=lengths[0], actual_seq_lengths_key=lengths[1], **kw)
    with FakeTensorMode() as mode:
        fake = meta_op(actual_seq_lengths_query=mode.from_tensor(lengths[0]),
                       actual_seq_lengths_key=mode.from_tensor(lengths[1]), **kw)
    assert fake.device == real.device == torch.device("cpu")


def test_keyword_helper_names_an_unknown_keyword():
    from custom_ops import _checks
    with pytest.raises(TypeError, match="bogus"):
        _checks.metadata_arguments(dict(actual_seq_lengths_query=None, actual_seq_lengths_key=None,
                                        num_heads_q=64, num_heads_k=1, head_dim=128, bogus=1))


def test_typed_wrapper_checks_an_explicit_device_against_the_lengths():
    """The dispatcher drops device="npu" (the schema default) even when written, so the typed
    wrapper checks an explicit device; without one the lengths' device is used."""
    import custom_ops
    ask = torch.tensor([7000, 300], dtype=torch.int32)
    with pytest.raises(ValueError, match="device"):
        custom_ops.npu_vllm_quant_lightning_indexer_metadata(
            actual_seq_lengths_query=None, actual_seq_lengths_key=ask, max_seqlen_q=1, device="npu")
    with pytest.raises(ValueError, match="actual_seq_lengths_key.*must be on device 'meta'"):
        custom_ops.npu_vllm_quant_lightning_indexer_metadata(
            actual_seq_lengths_query=None, actual_seq_lengths_key=ask, max_seqlen_q=1, device="meta")
    meta = custom_ops.npu_vllm_quant_lightning_indexer_metadata(
        actual_seq_lengths_query=None, actual_seq_lengths_key=ask, max_seqlen_q=1)
    assert meta.device.type == "cpu"


def test_metadata_op_compiles_without_graph_break():
    asq = torch.tensor([1, 4], dtype=torch.int32)
    ask = torch.tensor([7000, 300], dtype=torch.int32)

    def f(asq, ask):
        return meta_op(actual_seq_lengths_query=asq, actual_seq_lengths_key=ask, num_heads_q=64,
                       num_heads_k=1, head_dim=128, max_seqlen_q=4, device="cpu")

    compiled = torch.compile(f, fullgraph=True, backend="aot_eager")
    assert torch.equal(compiled(asq, ask), f(asq, ask))


@pytest.mark.parametrize("bad", [lambda m: m.__setitem__(0, 7), lambda m: m.__setitem__(1, 9),
                                 lambda m: m.__setitem__(2, 0), lambda m: m.__setitem__(2, 999)],
                         ids=["format", "backend", "no-workers", "too-many-workers"])
def test_decode_rejects_bad_header(bad):
    meta = _compute(md.SplitParams(md.BACKEND_CPU, 1, 0, 8192), [1], [10], "BSND", 3, 1, 1)
    bad(meta)
    with pytest.raises(ValueError, match="metadata"):
        md.decode(meta)
