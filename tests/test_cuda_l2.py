"""Phase 1's logits kept in L2 and dropped unwritten after phase 2 (backends/cuda/l2.py): the
set-aside's setting and which calls drop (no GPU needed), then on CUDA that a discard touches
no byte outside its buffer and that calls which drop their logits give the bits of calls that
do not, eagerly and in a CUDA graph."""
import pytest
import torch

from custom_ops.backends.cuda import configs

MB = 1 << 20
cuda = pytest.mark.skipif(not torch.cuda.is_available(),
                          reason="needs an NVIDIA GPU (none on this machine)")


@pytest.mark.parametrize("env,wanted", [(None, 20 * MB), ("", 20 * MB), ("  ", 20 * MB),
                                        ("0", 0), ("12", 12 * MB), ("0.5", MB // 2),
                                        ("1000", 40 * MB)])
def test_set_aside_follows_the_environment(monkeypatch, env, wanted):
    monkeypatch.setattr(configs, "L2_SET_ASIDE_MB", 20)
    assert configs.l2_set_aside_wanted(env, 40 * MB) == wanted
    monkeypatch.setattr(configs, "L2_SET_ASIDE_MB", None)  # the device's maximum
    assert configs.l2_set_aside_wanted(env, 40 * MB) == (40 * MB if wanted == 20 * MB else wanted)


@pytest.mark.parametrize("env", ["-1", "abc", "nan", "12MB"])
def test_bad_set_aside_is_refused_with_its_value(env):
    with pytest.raises(ValueError, match=f"CUSTOM_OPS_L2_SET_ASIDE_MB={env!r}"):
        configs.l2_set_aside_wanted(env, 30 * MB)


@pytest.mark.parametrize("nbytes,set_aside,keeps", [
    (16 * MB, 30 * MB, True),  # B64 64K next_n=1
    (configs.L2_KEEP_MIN_BYTES, configs.L2_KEEP_MIN_BYTES, True),
    (configs.L2_KEEP_MIN_BYTES - 1, 30 * MB, False),  # too few to pay for the launch
    (16 * MB, 0, False),  # no set-aside: the lines are gone before phase 2
    (16 * MB, configs.L2_KEEP_MIN_BYTES - 1, False),
    (50 * MB, 30 * MB, True), (50 * MB + 1, 30 * MB, False)])  # more than L2 holds
def test_which_calls_drop_their_logits(nbytes, set_aside, keeps):
    assert configs.l2_keeps_logits(nbytes, set_aside, 50 * MB) is keeps


@cuda
@pytest.mark.parametrize("head,tail", [(0, 0), (5, 7), (31, 1), (1, 33)])
def test_discard_leaves_every_byte_outside_its_lines(head, tail):
    """The buffer's partial lines at both ends are someone else's: written just before (so
    only L2 holds them), they read back intact after the discard of the slice between."""
    from custom_ops.backends.cuda import l2
    n = 1 << 18
    whole = torch.zeros(n, dtype=torch.float32, device="cuda")
    torch.empty(1 << 27, dtype=torch.int32, device="cuda").fill_(1)  # whole's zeros to DRAM
    fresh = torch.arange(n, dtype=torch.float32, device="cuda")
    whole.copy_(fresh)
    part = whole[head:n - tail]
    l2.discard(part)
    torch.cuda.synchronize()
    lo = head + (-part.data_ptr() % l2.LINE) // 4  # the first element of a whole line
    hi = lo + (part.numel() - (lo - head)) * 4 // l2.LINE * (l2.LINE // 4)
    assert 0 <= lo - head < l2.LINE // 4 and 0 <= n - tail - hi < l2.LINE // 4
    assert torch.equal(whole[:lo], fresh[:lo]) and torch.equal(whole[hi:], fresh[hi:])


def test_discard_refuses_other_element_sizes():
    pytest.importorskip("triton")
    from custom_ops.backends.cuda import l2  # (the check runs before any launch)
    with pytest.raises(ValueError, match="2-byte elements"):
        l2.discard(torch.zeros(64, dtype=torch.float16))


def _drop_every_call(monkeypatch, on):
    """Every call drops its logits (on) or none does; returns the list each discard appends
    to. Plans are cleared so that each call takes the full path once."""
    from custom_ops.backends.cuda import l2, plans
    monkeypatch.setattr(configs, "L2_KEEP_MIN_BYTES", 0 if on else 1 << 62)
    dropped = []
    real = l2.discard
    monkeypatch.setattr(l2, "discard", lambda buf, **k: dropped.append(buf.numel()) or
                        real(buf, **k))
    plans.clear()
    return dropped


@cuda
@pytest.mark.parametrize("q_lens,k_lens,dtype", [
    ([1] * 6, [9000, 0, 2500, 65, 17000, 700], torch.int8),
    ([1] * 4, [9000, 2500, 16000, 700], torch.float8_e4m3fn),
    ([4, 2, 3], [9000, 2500, 5000], torch.int8),
    ([2, 1], [12000, 3], torch.float8_e4m3fn)], ids=str)
def test_dropped_logits_give_the_same_bits(monkeypatch, q_lens, k_lens, dtype):
    """Twenty calls that drop their logits after phase 2 equal the call that keeps them, bit
    for bit and to the golden: nothing the op reads or returns was discarded early."""
    from custom_ops.testing import assert_indexer_close, make_indexer_inputs
    op = torch.ops.custom.npu_vllm_quant_lightning_indexer
    scale = torch.float16 if dtype == torch.int8 else torch.float32
    args, kwargs = make_indexer_inputs(q_lens=q_lens, k_lens=k_lens, qk_dtype=dtype,
                                       scale_dtype=scale, return_value=True, device="cuda",
                                       seed=11)
    _drop_every_call(monkeypatch, False)
    ref = op(*args, **kwargs)
    assert_indexer_close(*ref, args, kwargs)
    dropped = _drop_every_call(monkeypatch, True)
    for _ in range(20):
        torch.empty(1 << 26, dtype=torch.int32, device="cuda").fill_(0x7FC00001)  # poison
        out = op(*args, **kwargs)
        assert torch.equal(out[0], ref[0]) and torch.equal(out[1], ref[1])
    assert dropped, "no call dropped its logits"


@cuda
def test_dropped_logits_in_a_cuda_graph(monkeypatch):
    """Captured with the discard, replayed with new lengths: equals eager calls that keep
    their logits."""
    from custom_ops.testing import make_indexer_inputs
    op = torch.ops.custom.npu_vllm_quant_lightning_indexer
    args, kwargs = make_indexer_inputs(q_lens=[1] * 5, k_lens=[9000] * 5, return_value=True,
                                       device="cuda", seed=2)
    dropped = _drop_every_call(monkeypatch, True)
    op(*args, **kwargs)  # builds the kernels the capture launches
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        idx_g, val_g = op(*args, **kwargs)
    assert dropped
    _drop_every_call(monkeypatch, False)  # the eager calls below keep their logits
    for k_lens in ([9000] * 5, [17, 8999, 0, 4100, 6000], [1, 2, 3, 4, 5]):
        kwargs["actual_seq_lengths_key"].copy_(torch.tensor(k_lens, dtype=torch.int32))
        graph.replay()
        eager = op(*args, **kwargs)
        assert torch.equal(idx_g, eager[0]) and torch.equal(val_g, eager[1]), k_lens


@cuda
def test_default_calls_keep_nothing(monkeypatch):
    """Off unless asked for: a call of 9 MiB of logits takes no set-aside and discards nothing
    (its kernels are the ones the README's table measured)."""
    from custom_ops.backends.cuda import l2
    from custom_ops.testing import make_indexer_inputs
    monkeypatch.delenv(configs.L2_SET_ASIDE_ENV, raising=False)
    if configs.L2_SET_ASIDE_MB:
        pytest.skip("this build keeps logits by default")
    dropped = []
    monkeypatch.setattr(l2, "discard", lambda buf, **k: dropped.append(buf))
    args, kwargs = make_indexer_inputs(q_lens=[1] * 16, k_lens=[131072] * 16, device="cuda",
                                       seed=4)
    torch.ops.custom.npu_vllm_quant_lightning_indexer(*args, **kwargs)
    assert l2.set_aside(torch.device("cuda"), False) == 0 and not dropped
