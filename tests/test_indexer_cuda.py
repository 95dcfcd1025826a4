"""CUDA-only checks of the indexer and its metadata: determinism, poisoned outputs, bounded
workspace, the on-device schedule, and graph mode (torch.compile and CUDA graphs)."""
import pytest
import torch

from custom_ops import metadata as md
from custom_ops.examples import QLINetwork, network_call, seed_inputs
from custom_ops.testing import assert_indexer_close, make_indexer_inputs, tie_keys

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(),
                                reason="needs an NVIDIA GPU (none on this machine)")

op = torch.ops.custom.npu_vllm_quant_lightning_indexer
meta_op = torch.ops.custom.npu_vllm_quant_lightning_indexer_metadata
DTYPES = {"int8": (torch.int8, torch.float16), "fp8": (torch.float8_e4m3fn, torch.float32)}


def poison():
    """Fill (then free) a large block so that fresh allocations start as garbage, not zeros."""
    torch.empty(1 << 26, dtype=torch.int32, device="cuda").fill_(0x7FC00001)


def metadata_for(kwargs, max_seqlen_q):
    return meta_op(actual_seq_lengths_query=kwargs["actual_seq_lengths_query"],
                   actual_seq_lengths_key=kwargs["actual_seq_lengths_key"], num_heads_q=64,
                   num_heads_k=1, head_dim=128, max_seqlen_q=max_seqlen_q,
                   layout_query=kwargs["layout_query"], sparse_count=kwargs["sparse_count"],
                   sparse_mode=kwargs["sparse_mode"], cmp_ratio=kwargs["cmp_ratio"], device="cuda")


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("layout", ["BSND", "TND"])
def test_twenty_reruns_bitwise_equal(dtype, layout):
    qk, sc = DTYPES[dtype]
    args, kwargs = make_indexer_inputs(q_lens=[4, 1, 3], k_lens=[9000, 2500, 700], layout=layout,
                                       qk_dtype=qk, scale_dtype=sc, return_value=True,
                                       device="cuda", seed=3)
    poison()
    ref = op(*args, **kwargs)
    assert_indexer_close(*ref, args, kwargs)
    for _ in range(20):
        poison()
        out = op(*args, **kwargs)
        assert torch.equal(out[0], ref[0]) and torch.equal(out[1], ref[1])


@pytest.mark.parametrize("layout", ["BSND", "TND"])
def test_chunked_workspace_equals_whole(monkeypatch, layout):
    """A problem larger than the workspace runs in chunks (SPEC §1.6) with the same result; in
    BSND a sequence's 6 rows exceed the 3-row chunk, so each sequence runs in token windows."""
    from custom_ops.backends.cuda import indexer as cuda_indexer
    args, kwargs = make_indexer_inputs(q_lens=[5, 3, 6], k_lens=[3000, 800, 5000], layout=layout,
                                       return_value=True, device="cuda", seed=5)
    from custom_ops.backends.cuda import configs
    whole = op(*args, **kwargs)
    cap = kwargs["block_table"].shape[1] * args[1].shape[1]
    budget = configs.scratch_bytes(3, cap, kwargs["sparse_count"])
    assert configs.rows_per_chunk(cap, kwargs["sparse_count"], budget) == 3
    monkeypatch.setattr(cuda_indexer, "WORKSPACE_BYTES", budget)  # 3 rows per chunk
    chunked = op(*args, **kwargs)
    assert torch.equal(whole[0], chunked[0]) and torch.equal(whole[1], chunked[1])
    assert_indexer_close(*chunked, args, kwargs)


@pytest.mark.parametrize("layout,q_lens,cmp", [("TND", [300, 212], 1), ("BSND", [4, 2], 4)])
def test_eager_workspace_follows_the_lengths_not_the_table(monkeypatch, layout, q_lens, cmp):
    """SPEC §1.6: a block table sized for an 8M-key context and short lengths. The eager call sizes
    its logits rows by the longest row (peak memory within scratch_bytes at that width, under a
    quarter of the logits at the table's width) and gives the same bits as rows at the table's
    capacity."""
    from custom_ops.backends.cuda import configs
    args, kwargs = make_indexer_inputs(q_lens=q_lens, k_lens=[12000, 5000], layout=layout,
                                       cmp_ratio=cmp, return_value=True, device="cuda", seed=9)
    bt, k = kwargs["block_table"], kwargs["sparse_count"]
    cap = 1 << 23
    kwargs["block_table"] = torch.cat(
        [bt, bt.new_full((bt.shape[0], cap // args[1].shape[1] - bt.shape[1]), 1 << 30)], 1)
    rows = sum(q_lens) if layout == "TND" else len(q_lens) * max(q_lens)
    assert rows * cap * 4 > configs.SIZE_BY_LENGTHS_BYTES
    bound = configs.scratch_bytes(rows, configs.row_width(cap, 12000 // cmp), k) + (2 << 20)
    assert bound < rows * cap * 4 // 4
    op(*args, **kwargs)  # the first call also builds and loads the kernels a capture would take
    poison()
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    narrow = op(*args, **kwargs)
    torch.cuda.synchronize()
    assert torch.cuda.max_memory_allocated() - before <= bound
    assert_indexer_close(*narrow, args, kwargs)
    monkeypatch.setattr(configs, "SIZE_BY_LENGTHS_BYTES", 1 << 62)  # rows at the capacity
    poison()
    wide = op(*args, **kwargs)
    assert torch.equal(narrow[0], wide[0]) and torch.equal(narrow[1], wide[1])


def test_width_follows_length_writes_that_bump_no_version(monkeypatch):
    """The eager width rule reads max(actual_seq_lengths_key) on every call: a write through
    .data (like a kernel's or a graph replay's) bumps no version counter, and a width remembered
    per version would drop the new keys."""
    from custom_ops.backends.cuda import configs
    monkeypatch.setattr(configs, "SIZE_BY_LENGTHS_BYTES", -1)  # every call sizes by the lengths
    args, kwargs = make_indexer_inputs(q_lens=[1, 1], k_lens=[3000, 3000], return_value=True,
                                       device="cuda", seed=8)
    ask = kwargs["actual_seq_lengths_key"]
    ask.data.copy_(torch.tensor([600, 200], dtype=torch.int32))
    assert_indexer_close(*op(*args, **kwargs), args, kwargs)
    version = ask._version
    ask.data.copy_(torch.tensor([2900, 1500], dtype=torch.int32))
    assert ask._version == version
    assert_indexer_close(*op(*args, **kwargs), args, kwargs)


@pytest.mark.parametrize("with_metadata", [False, True])
def test_inference_mode_calls(with_metadata):
    """vLLM runs models under inference_mode, whose tensors have no version counter."""
    with torch.inference_mode():
        args, kwargs = make_indexer_inputs(q_lens=[2, 1], k_lens=[3000, 700], return_value=True,
                                           device="cuda", seed=9)
        if with_metadata:
            kwargs["metadata"] = metadata_for(kwargs, 2)
        out = op(*args, **kwargs)
        out2 = op(*args, **kwargs)
    assert_indexer_close(*out, args, kwargs)
    assert torch.equal(out[0], out2[0]) and torch.equal(out[1], out2[1])


def test_empty_key_cache_gives_padding():
    """num_blocks = 0 under lengths that name keys: the CUDA backend reads no table entry on
    the host (it clamps block ids on the device), and with no block to clamp to, every row is
    -1 and nothing is read."""
    args, kwargs = make_indexer_inputs(q_lens=[1, 2], k_lens=[300, 100], return_value=True,
                                       device="cuda", seed=10)
    args = list(args)
    args[1], args[4] = args[1][:0], args[4][:0]
    poison()
    idx, val = op(*args, **kwargs)
    assert (idx == -1).all() and (val == float("-inf")).all()


def test_strided_lengths_and_column_major_block_table():
    """Length tensors and block tables of any strides give the contiguous ones' result."""
    args, kwargs = make_indexer_inputs(q_lens=[2, 1, 3], k_lens=[2500, 700, 1800],
                                       return_value=True, device="cuda", seed=11)
    want = op(*args, **kwargs)
    strided = dict(kwargs)
    for name in ("actual_seq_lengths_query", "actual_seq_lengths_key"):
        strided[name] = torch.stack([kwargs[name], kwargs[name]], 1)[:, 0]
        assert strided[name].stride() == (2,)
    strided["block_table"] = kwargs["block_table"].t().contiguous().t()
    got = op(*args, **strided)
    assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])


@pytest.mark.parametrize("layout", ["BSND", "TND"])
@pytest.mark.parametrize("q_lens,k_lens,cmp", [([1] * 7, [70000, 3, 0, 4096, 65, 12000, 900], 1),
                                               ([40, 0, 17], [5000, 100, 64000], 4),
                                               ([3], [0], 1)])
def test_device_metadata_equals_torch_schedule(layout, q_lens, k_lens, cmp):
    """The one-launch metadata kernel reproduces metadata.compute's schedule exactly."""
    from custom_ops.backends.cuda.configs import split_params
    from custom_ops.backends.cuda.indexer_metadata import num_workers
    if layout == "TND":
        asq = torch.cumsum(torch.tensor(q_lens), 0).to(torch.int32)
    else:
        asq = torch.tensor(q_lens, dtype=torch.int32)
    ask = torch.tensor(k_lens, dtype=torch.int32)
    for mode in (0, 3):
        for max_q in (max(q_lens), 0 if layout == "TND" else max(q_lens)):
            kw = dict(layout_query=layout, sparse_count=2048, sparse_mode=mode, cmp_ratio=cmp)
            got = meta_op(actual_seq_lengths_query=asq.cuda(), actual_seq_lengths_key=ask.cuda(),
                          num_heads_q=64, num_heads_k=1, head_dim=128, max_seqlen_q=max_q,
                          device="cuda", **kw)
            w = num_workers(torch.device("cuda"))
            want = md.compute(split_params(w, max_q), asq, ask, batch=len(k_lens),
                              max_seqlen_q=max_q, device="cpu", **kw)
            assert torch.equal(got.cpu(), want), (got.cpu() != want).nonzero()[:8].tolist()
            sched = md.decode(got)
            assert sched.backend == md.BACKEND_CUDA and sched.num_workers == w


def test_given_metadata_of_another_backend_is_rejected():
    args, kwargs = make_indexer_inputs(q_lens=[2], k_lens=[300], device="cuda")
    cpu_kwargs = {k: v.cpu() if isinstance(v, torch.Tensor) else v for k, v in kwargs.items()}
    cpu_meta = meta_op(actual_seq_lengths_query=cpu_kwargs["actual_seq_lengths_query"],
                       actual_seq_lengths_key=cpu_kwargs["actual_seq_lengths_key"], num_heads_q=64,
                       num_heads_k=1, head_dim=128, max_seqlen_q=2, device="cpu")
    with pytest.raises(ValueError, match="backend 'cpu'"):
        op(*args, metadata=cpu_meta.cuda(), **kwargs)


def test_metadata_checked_per_call_not_per_tensor():
    """Metadata accepted for one call is checked again for another (batch size differs)."""
    args, kwargs = make_indexer_inputs(q_lens=[2, 1], k_lens=[300, 200], device="cuda")
    meta = metadata_for(kwargs, 2)
    op(*args, metadata=meta, **kwargs)
    args3, kwargs3 = make_indexer_inputs(q_lens=[2, 1, 1], k_lens=[300, 200, 100], device="cuda")
    with pytest.raises(ValueError, match="batch size 2"):
        op(*args3, metadata=meta, **kwargs3)


def test_metadata_must_cover_every_query_token():
    """A schedule made for fewer query tokens than a sequence has would leave rows unscheduled:
    eager calls reject it; one made for more tokens (prefill metadata in decode) is fine."""
    args, kwargs = make_indexer_inputs(q_lens=[80, 3], k_lens=[3000, 500], sparse_count=256,
                                       device="cuda")
    with pytest.raises(ValueError, match="covers 64 query tokens per sequence"):
        op(*args, metadata=metadata_for(kwargs, 17), **kwargs)
    args, kwargs = make_indexer_inputs(q_lens=[3, 2], k_lens=[3000, 1000], sparse_count=256,
                                       return_value=True, device="cuda")
    out = op(*args, metadata=metadata_for(kwargs, 64), **kwargs)
    assert_indexer_close(*out, args, kwargs)


@pytest.mark.parametrize("inference", [False, True])
def test_metadata_of_other_key_lengths_is_rejected(inference):
    """A schedule of another step's key lengths would leave keys unscored (its units end short)
    or schedule work past them: eager calls reject it, inference tensors included."""
    with torch.inference_mode(inference):
        args, kwargs = make_indexer_inputs(q_lens=[2, 1], k_lens=[3000, 1500], device="cuda")
        stale = dict(kwargs, actual_seq_lengths_key=kwargs["actual_seq_lengths_key"] // 4)
        meta = metadata_for(stale, 2)
        with pytest.raises(ValueError, match="does not split this call's work"):
            op(*args, metadata=meta, **kwargs)
        out = op(*args, metadata=metadata_for(kwargs, 2), **kwargs)
    assert_indexer_close(*out, args, kwargs)


@pytest.mark.parametrize("layout", ["BSND", "TND"])
def test_prefill_query_lengths_past_the_rows_are_clamped(layout):
    """Query lengths past S1 (BSND) or T (TND) break SPEC §1.1; without a sync the call cannot
    raise, so it answers as if they were clamped, from scored keys only (the schedule counts
    its units from the same clamped lengths); given metadata, the eager host check raises."""
    lens = [70, 3] if layout == "BSND" else [3, 70]
    args, kwargs = make_indexer_inputs(q_lens=lens, k_lens=[1000, 500], sparse_count=64,
                                       layout=layout, return_value=True, device="cuda", seed=13)
    good = dict(kwargs)
    bad = dict(kwargs, actual_seq_lengths_query=kwargs["actual_seq_lengths_query"].clone())
    bad["actual_seq_lengths_query"][0 if layout == "BSND" else 1] = 2000
    if layout == "BSND":
        good["actual_seq_lengths_query"] = bad["actual_seq_lengths_query"].clamp(max=70)
    poison()
    assert_indexer_close(*op(*args, **bad), args, good)
    with pytest.raises(ValueError, match="actual_seq_lengths_query"):
        op(*args, metadata=metadata_for(bad, 70 if layout == "BSND" else 2000), **bad)


@pytest.mark.parametrize("path", ["one launch", "key windows", "chunks", "sequence windows",
                                  "token windows"])
def test_corrupt_metadata_in_a_graph_gives_padding_not_garbage(monkeypatch, path):
    """Inside a CUDA graph the header is checked on the device: a wrong one yields -1 rows, also
    where the keys are scored in windows and where the call runs in chunks of rows that fit the
    workspace (BSND by whole sequences or, one row a chunk, each sequence in token windows; TND
    in token windows): both make their own schedules, and a chunk's is gated by the caller's
    header. The same capture with the right metadata gives the eager result, also when the eager
    warm-up before it passed no metadata."""
    from custom_ops.backends.cuda import configs, indexer as cuda_indexer
    if path == "key windows":
        force_key_windows(monkeypatch, 512)
    layout = "TND" if path == "token windows" else "BSND"
    args, kwargs = make_indexer_inputs(q_lens=[2, 2], k_lens=[500, 900], sparse_count=32,
                                       layout=layout, device="cuda", seed=4)
    if path in ("chunks", "sequence windows", "token windows"):
        rows = 1 if path == "sequence windows" else 2  # of the 4
        cap = kwargs["block_table"].shape[1] * args[1].shape[1]
        monkeypatch.setattr(cuda_indexer, "WORKSPACE_BYTES", configs.scratch_bytes(rows, cap, 32))
        assert configs.rows_per_chunk(cap, 32, cuda_indexer.WORKSPACE_BYTES) == rows
    meta = metadata_for(kwargs, 2)
    bad = meta.clone()
    bad[0] = 0  # not format v1
    # the warm-up (kernels are loaded outside the capture) passes no metadata: it must still
    # load the chunks' header gate, which only a call given metadata runs
    eager = op(*args, **kwargs)
    graph = torch.cuda.CUDAGraph()
    poison()
    with torch.cuda.graph(graph):
        good = op(*args, metadata=meta, **kwargs)
        idx, _ = op(*args, metadata=bad, **kwargs)
    graph.replay()
    torch.cuda.synchronize()
    assert (idx == -1).all()
    assert torch.equal(good[0], eager[0])
    assert_indexer_close(*good, args, kwargs)


def test_cuda_graph_replays_with_new_lengths():
    """Captured once, replayed with new length values in the same tensors: equals eager."""
    args, kwargs = make_indexer_inputs(q_lens=[4, 4, 4], k_lens=[6000, 6000, 6000],
                                       sparse_count=512, return_value=True, device="cuda", seed=1)
    meta = metadata_for(kwargs, 4)
    op(*args, metadata=meta, **kwargs)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        meta_g = metadata_for(kwargs, 4)
        idx_g, val_g = op(*args, metadata=meta_g, **kwargs)
    for q_lens, k_lens in (([4, 4, 4], [6000, 6000, 6000]), ([1, 3, 0], [5999, 17, 2000]),
                           ([2, 4, 1], [0, 4100, 6000])):
        kwargs["actual_seq_lengths_query"].copy_(torch.tensor(q_lens, dtype=torch.int32))
        kwargs["actual_seq_lengths_key"].copy_(torch.tensor(k_lens, dtype=torch.int32))
        poison()
        graph.replay()
        eager = op(*args, **kwargs)
        assert torch.equal(idx_g, eager[0]) and torch.equal(val_g, eager[1]), (q_lens, k_lens)
        assert_indexer_close(idx_g, val_g, args, kwargs)


def force_key_windows(monkeypatch, keys):
    """Captured calls score their keys in windows of `keys` whatever their size (and eager calls
    warm that path up again)."""
    from custom_ops.backends.cuda import configs, indexer as cuda_indexer
    monkeypatch.setattr(cuda_indexer, "_warmed", {})
    monkeypatch.setattr(configs, "GRAPH_LOGITS_BYTES", 0)
    monkeypatch.setattr(configs, "MIN_WINDOW_KEYS", keys)


def widen_table(args, kwargs, cap):
    """The block table widened to `cap` keys with block ids past the cache (never read)."""
    bt = kwargs["block_table"]
    extra = cap // args[1].shape[1] - bt.shape[1]
    kwargs["block_table"] = torch.cat([bt, bt.new_full((bt.shape[0], extra), 1 << 30)], 1)


def capture(args, kwargs, with_metadata, max_seqlen_q):
    # the eager call also builds and loads the kernels of the path the capture takes (the
    # table's width, key windows): no kernel can be loaded while a stream is captured
    op(*args, **kwargs)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        meta = metadata_for(kwargs, max_seqlen_q) if with_metadata else None
        out = op(*args, metadata=meta, **kwargs)
    return graph, out


@pytest.mark.parametrize("layout,q_lens,cmp,with_metadata", [("BSND", [4, 1, 3], 1, True),
                                                             ("TND", [3, 5, 2], 4, False)])
def test_graph_key_windows_equal_eager(monkeypatch, layout, q_lens, cmp, with_metadata):
    """A captured call over a wide table scores its keys in windows (1024 keys here, 16 of them
    over the 16K-key table) and merges their top-k: every replay with new lengths (rows ending
    on a window's edge, one past it, within the first window, empty) equals the eager call bit
    for bit."""
    from custom_ops.backends.cuda import indexer as cuda_indexer
    force_key_windows(monkeypatch, 1024)
    taken = []
    run_windows = cuda_indexer._run_key_windows
    monkeypatch.setattr(cuda_indexer, "_run_key_windows",
                        lambda *a, **kw: taken.append(kw["width"]) or run_windows(*a, **kw))
    k_lens = [9000, 2500, 700]
    args, kwargs = make_indexer_inputs(q_lens=q_lens, k_lens=k_lens, layout=layout,
                                       cmp_ratio=cmp, sparse_count=600, return_value=True,
                                       device="cuda", seed=11)
    widen_table(args, kwargs, 1 << 14)
    graph, (idx_g, val_g) = capture(args, kwargs, with_metadata, max(q_lens))
    assert taken and set(taken) == {1024}  # the warm-up's and the capture's
    ask = kwargs["actual_seq_lengths_key"]
    # each batch within its cached keys (the table's other entries are past the cache)
    for new in (k_lens, [1024 * cmp, 0, 700], [2048 * cmp + 3, 2500, 699], [1025 * cmp, 1, 0]):
        ask.copy_(torch.tensor(new, dtype=torch.int32))
        poison()
        graph.replay()
        eager = op(*args, **kwargs)
        assert torch.equal(idx_g, eager[0]) and torch.equal(val_g, eager[1]), new
        assert_indexer_close(idx_g, val_g, args, kwargs)


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("k", [1, 600, 2048])
def test_key_windows_outside_capture(monkeypatch, dtype, k):
    """The key-window path run eagerly (as if captured; so memcheck, which cannot follow a
    capture without the caching allocator, covers its kernels): 512-key windows, ragged rows,
    k above a window's keys; equal to the one-window call bit for bit and close to the golden."""
    from custom_ops.backends.cuda import indexer as cuda_indexer
    qk, sc = DTYPES[dtype]
    args, kwargs = make_indexer_inputs(q_lens=[3, 1, 2], k_lens=[2600, 511, 0], qk_dtype=qk,
                                       scale_dtype=sc, sparse_count=k, return_value=True,
                                       device="cuda", seed=13)
    widen_table(args, kwargs, 4096)
    whole = op(*args, **kwargs)
    force_key_windows(monkeypatch, 512)
    monkeypatch.setattr(cuda_indexer, "_in_graph_or_compile", lambda: True)
    poison()
    windowed = op(*args, **kwargs)
    assert torch.equal(whole[0], windowed[0]) and torch.equal(whole[1], windowed[1])
    assert_indexer_close(*windowed, args, kwargs)


def test_capture_after_an_eager_call_of_another_width(monkeypatch):
    """An eager call sizes its rows by the lengths, its capture by the 1M-key table (one window):
    other compiled variants (threshold samples, segment counts). The eager call builds and loads
    the capture's kernels without running them, so the capture loads nothing (a load during
    capture is refused) and every replay equals eager."""
    from custom_ops.backends.cuda import configs, indexer as cuda_indexer
    monkeypatch.setattr(cuda_indexer, "_warmed", {})
    monkeypatch.setattr(configs, "SIZE_BY_LENGTHS_BYTES", 0)  # eager rows by the lengths
    args, kwargs = make_indexer_inputs(q_lens=[4, 1, 3], k_lens=[9000, 2500, 700],
                                       sparse_count=600, return_value=True, device="cuda",
                                       seed=14)
    widen_table(args, kwargs, 1 << 20)
    assert configs.window_keys(12, 1 << 20, args[1].shape[1]) == 1 << 20
    graph, (idx_g, val_g) = capture(args, kwargs, True, 4)
    assert [sig[10] for sig in cuda_indexer._warmed] == [1 << 20]  # the capture's width
    for new in ([9000, 2500, 700], [4097, 0, 33]):
        kwargs["actual_seq_lengths_key"].copy_(torch.tensor(new, dtype=torch.int32))
        poison()
        graph.replay()
        eager = op(*args, **kwargs)
        assert torch.equal(idx_g, eager[0]) and torch.equal(val_g, eager[1]), new


def test_graph_workspace_does_not_follow_the_table(monkeypatch):
    """SPEC §1.6 in a CUDA graph: a block table of 8M keys and short lengths. The capture scores
    the keys in windows (GRAPH_LOGITS_BYTES 16 MiB here: about 25 windows), so its memory stays
    within one window's workspace instead of the table's 384 MiB of logits, and the replay
    equals the eager call."""
    from custom_ops.backends.cuda import configs, indexer as cuda_indexer
    monkeypatch.setattr(cuda_indexer, "_warmed", {})
    monkeypatch.setattr(configs, "GRAPH_LOGITS_BYTES", 16 << 20)
    args, kwargs = make_indexer_inputs(q_lens=[4, 1, 3], k_lens=[9000, 2500, 700],
                                       return_value=True, device="cuda", seed=12)
    cap, rows, k = 1 << 23, 12, kwargs["sparse_count"]
    widen_table(args, kwargs, cap)
    width = configs.window_keys(rows, cap, args[1].shape[1])
    assert width < cap // 16
    # one window's workspace, the window top-k buffers, the per-window schedules and lengths
    bound = configs.scratch_bytes(rows, width, k) + 6 * rows * k * 4 + (2 << 20)
    assert bound < rows * cap * 4 // 4
    op(*args, **kwargs)
    poison()
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    graph, (idx_g, val_g) = capture(args, kwargs, True, 4)
    torch.cuda.synchronize()
    assert torch.cuda.max_memory_allocated() - before <= bound
    graph.replay()
    eager = op(*args, **kwargs)
    assert torch.equal(idx_g, eager[0]) and torch.equal(val_g, eager[1])


@pytest.mark.parametrize("mode", ["default", "reduce-overhead"])
def test_compiled_network_equals_eager_on_cuda(mode):
    """The doc's QLINetwork under torch.compile(fullgraph=True), and under CUDA graphs replayed
    with new length values, equals eager."""
    torch._dynamo.reset()
    args, kwargs = seed_inputs("cuda", sparse_mode=3, cmp_ratio=4)
    model = QLINetwork(4, 512, "cuda", cmp_ratio=4)
    compiled = torch.compile(model, fullgraph=True, dynamic=False, mode=mode)
    gen = torch.Generator().manual_seed(7)
    for step in range(4):
        if step:
            q = torch.randint(0, 5, (24,), generator=gen, dtype=torch.int32)
            k = torch.randint(0, 513, (24,), generator=gen, dtype=torch.int32)
            kwargs["actual_seq_lengths_query"].copy_(q)
            kwargs["actual_seq_lengths_key"].copy_(k)
        eager = network_call(model, args, kwargs).clone()
        out = network_call(compiled, args, kwargs).clone()
        assert torch.equal(out, eager), f"step {step}"
        assert_indexer_close(out, torch.empty(0), args, kwargs)
    torch._dynamo.reset()


def test_all_equal_scores_take_the_exact_path():
    """Zero weights make every score 0: the sampled threshold keeps every key, so the exact radix
    select must run, and ties go to the smaller index (SPEC §1.4)."""
    args, kwargs = make_indexer_inputs(q_lens=[2, 1], k_lens=[20000, 9000], sparse_count=2048,
                                       return_value=True, device="cuda")
    args = (args[0], args[1], torch.zeros_like(args[2]), args[3], args[4])
    idx, val = op(*args, **kwargs)
    want = torch.arange(2048, dtype=torch.int32, device="cuda")
    assert torch.equal(idx[0, 1, 0], want) and torch.equal(idx[1, 0, 0], want)
    assert (val[0, 1, 0] == 0).all()
    assert_indexer_close(idx, val, args, kwargs, exact=True, rtol=0)


def _both_orders_agree(monkeypatch, args, kwargs):
    """The call with its top-k ordered by buckets (place then rank, then both in one launch),
    then by the sort: each equals the golden, and all are equal bit for bit."""
    import dataclasses
    from custom_ops.backends.cuda import configs
    outs = []
    for rows, one_launch in ((10_000, 10_000), (10_000, 1), (0, 10_000)):
        monkeypatch.setattr(configs, "TOPK", dataclasses.replace(
            configs.TOPK, bucket_max_rows=rows, place_rank_rows=one_launch))
        poison()
        outs.append(op(*args, **kwargs))
        assert_indexer_close(*outs[-1], args, kwargs)
    for out in outs[1:]:
        assert torch.equal(outs[0][0], out[0]) and torch.equal(outs[0][1], out[1])


@pytest.mark.parametrize("k", [1, 300, 2047])
def test_topk_orders_agree_at_the_edges_of_k(monkeypatch, k):
    """Rows of exactly k and k + 1 keys (every key taken; one more than k: the threshold path),
    a row well above k and an empty row, with k = 1, not a power of two, and just below 2048:
    the bucket order and the sort give the golden's result, bit for bit."""
    args, kwargs = make_indexer_inputs(q_lens=[1, 1, 1, 1], k_lens=[k, k + 1, 8 * k + 100, 0],
                                       sparse_count=k, return_value=True, device="cuda", seed=k)
    _both_orders_agree(monkeypatch, args, kwargs)


@pytest.mark.parametrize("k", [512, 2048])
def test_bucket_order_takes_more_candidates_than_slots(monkeypatch, k):
    """A threshold far too low (aimed at three times CAP candidates): the bucket order places
    only the groups that start before k, so it needs no exact fallback, and it gives the
    golden's result, bit for bit the sort order's (which takes the exact fallback)."""
    from custom_ops.backends.cuda import configs
    from custom_ops.backends.cuda import indexer as cuda_indexer
    from custom_ops.backends.cuda.topk import _indexer_place_kernel
    monkeypatch.setattr(configs, "target_candidates", lambda k, cap: 3 * cap)
    groups = []
    real = cuda_indexer.launch

    def spy(kernel, grid, *a, **kw):
        if kernel is _indexer_place_kernel:
            groups.append(a[7])  # each slot's group word: first | size << 16
        return real(kernel, grid, *a, **kw)
    monkeypatch.setattr(cuda_indexer, "launch", spy)
    args, kwargs = make_indexer_inputs(q_lens=[1, 1, 1], k_lens=[60000, 20000, 9000],
                                       sparse_count=k, return_value=True, device="cuda", seed=k)
    _both_orders_agree(monkeypatch, args, kwargs)
    # the exact fallback puts its k keys in one group; the placed top group is a few keys
    assert ((groups[0][:, 0] >> 16) < k).all(), (groups[0][:, 0] >> 16).tolist()


@pytest.mark.parametrize("k", [512, 2048])
def test_place_rank_takes_more_candidates_than_slots(monkeypatch, k):
    """The same far too low threshold with place and rank in one launch: only the groups that
    start before k are placed (each program's cursors then count its groups' candidates, at
    least k in all; the exact fallback places none), and the result is the golden's."""
    import dataclasses
    from custom_ops.backends.cuda import configs
    from custom_ops.backends.cuda import indexer as cuda_indexer
    from custom_ops.backends.cuda.topk import _indexer_place_rank_kernel
    monkeypatch.setattr(configs, "target_candidates", lambda k, cap: 3 * cap)
    monkeypatch.setattr(configs, "TOPK", dataclasses.replace(configs.TOPK, place_rank_rows=1))
    cursors = []
    real = cuda_indexer.launch

    def spy(kernel, grid, *a, **kw):
        out = real(kernel, grid, *a, **kw)
        if kernel is _indexer_place_rank_kernel:
            # after the kernel, each owned bucket's cursor ends its group: the row's largest
            # cursor is where its placed candidates end
            cursors.append(a[6][:, 1].max(1).values.clone())
        return out
    monkeypatch.setattr(cuda_indexer, "launch", spy)
    args, kwargs = make_indexer_inputs(q_lens=[1, 1, 1], k_lens=[60000, 20000, 9000],
                                       sparse_count=k, return_value=True, device="cuda", seed=k)
    poison()
    assert_indexer_close(*op(*args, **kwargs), args, kwargs)
    assert (cursors[0] >= k).all(), cursors[0].tolist()


def test_long_rows_match_the_golden():
    """A row of 128K keys (its threshold samples 8192 scores, not 4096) next to a short row, in
    one call, against the golden."""
    args, kwargs = make_indexer_inputs(q_lens=[1, 1], k_lens=[131072, 5000], sparse_count=2048,
                                       block_size=64, return_value=True, device="cuda", seed=11)
    poison()
    assert_indexer_close(*op(*args, **kwargs), args, kwargs)


@pytest.mark.parametrize("block_size", [16, 128])
@pytest.mark.parametrize("block_k", [64, 128])
@pytest.mark.parametrize("q_lens", [[1, 1, 1, 1], [2, 1, 2], [4, 3, 4], [7, 2]], ids=str)
def test_kernel_paths_agree(monkeypatch, block_size, block_k, q_lens):
    """Every way the kernels can run a call matches the golden, and the two top-k orderings
    (buckets, torch.sort) give the same bits: key tiles gathered per row
    (block 16) or per page (block 128, a multiple of block_k), decode tokens stacked into one
    dot (next_n <= 4) or looped (7)."""
    import dataclasses
    from custom_ops.backends.cuda import configs
    for key, lc in list(configs.LOGITS.items()):
        monkeypatch.setitem(configs.LOGITS, key, dataclasses.replace(lc, block_k=block_k))
    for dtype, (qk, sc) in DTYPES.items():
        args, kwargs = make_indexer_inputs(
            q_lens=q_lens, k_lens=[9000, 5000, 3000, 40][:len(q_lens)], qk_dtype=qk,
            scale_dtype=sc, block_size=block_size, sparse_count=1024, return_value=True,
            device="cuda", seed=len(q_lens))
        outs = []
        for order in (dict(bucket_max_rows=10_000), dict(bucket_max_rows=0)):
            monkeypatch.setattr(configs, "TOPK", dataclasses.replace(configs.TOPK, **order))
            poison()
            outs.append(op(*args, **kwargs))
            assert_indexer_close(*outs[-1], args, kwargs)
        for out in outs[1:]:
            assert torch.equal(outs[0][0], out[0]) and torch.equal(outs[0][1], out[1]), dtype


@pytest.mark.parametrize("dtype", list(DTYPES))
def test_tnd_decode_stacks_tokens_and_keeps_ties_exact(dtype):
    """TND decode with at most 4 tokens in all takes the stacked path; integer-valued inputs with
    repeated keys make real ties, which must come back in index order (exact comparison)."""
    qk, sc = DTYPES[dtype]
    for q_lens in ([2, 1, 1], [1, 2]):
        args, kwargs = make_indexer_inputs(q_lens=q_lens, k_lens=[7000, 3000, 900][:len(q_lens)],
                                           layout="TND", qk_dtype=qk, scale_dtype=sc,
                                           sparse_count=512, ties=True, return_value=True,
                                           device="cuda", seed=11)
        poison()
        assert_indexer_close(*op(*args, **kwargs), args, kwargs, exact=True)


@pytest.mark.parametrize("option", [("tma", False, True), ("scale_pairs", False, True),
                                    ("gluon_stages", 0, 5),
                                    ("max_stack", 1, 4), ("split_dot", False, True),
                                    ("rotate_epilogue", False, True)],
                         ids=lambda o: o[0])
@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("q_lens,layout", [([1, 1, 1], "BSND"), ([2, 1, 2], "BSND"),
                                           ([3, 2, 4], "BSND"), ([40, 30], "TND")],
                         ids=["single", "pair", "stacked", "prefill"])
def test_logits_options_give_the_same_bits(monkeypatch, option, dtype, q_lens, layout):
    """Phase 1's tuning options — key tiles by TMA descriptor (page-contiguous tiles only), 2-byte
    key scales read as int32 pairs, the Gluon kernel (int8 and fp8 decode), tokens stacked into
    one dot (1: the per-token loop), the stacked tokens as two halves' dots, the second half's
    epilogue deferred to the next tile — give the same bits as the plain kernel, on every
    phase-1 path, with a cache strided along the block axis."""
    import dataclasses
    from custom_ops.backends.cuda import configs
    name, *values = option
    qk, sc = DTYPES[dtype]
    if name == "split_dot" and layout == "BSND" and (
            max(q_lens) == 1 or max(q_lens) == 2 and qk != torch.int8):
        pytest.skip("split_dot applies from four stacked tokens, and to the Gluon kernel's "
                    "int8 pair: the same kernel either way")
    args, kwargs = make_indexer_inputs(q_lens=q_lens, k_lens=[5000, 3000, 700][:len(q_lens)],
                                       layout=layout, qk_dtype=qk, scale_dtype=sc,
                                       block_size=128, sparse_count=512, return_value=True,
                                       device="cuda", seed=7)
    outs = []
    for value in values:
        for key, lc in list(configs.LOGITS.items()):
            monkeypatch.setitem(configs.LOGITS, key,
                                dataclasses.replace(lc, block_k=64, **{name: value}))
        poison()
        outs.append(op(*args, **kwargs))
        assert_indexer_close(*outs[-1], args, kwargs)
    assert torch.equal(outs[0][0], outs[1][0]) and torch.equal(outs[0][1], outs[1][1])


@pytest.mark.parametrize("block_size", [64, 256])
@pytest.mark.parametrize("scale_dtype", [torch.float16, torch.float32], ids=str)
@pytest.mark.parametrize("qk_dtype", [torch.int8, torch.float8_e4m3fn], ids=["int8", "fp8"])
@pytest.mark.parametrize("q_lens,layout,mode", [([1, 1, 1, 1], "BSND", 3), ([2, 1, 2], "BSND", 3),
                                                ([4, 3, 1], "BSND", 0), ([1, 2], "TND", 3)],
                         ids=["single", "pair", "stacked", "tnd"])
def test_gluon_logits_give_the_same_bits(monkeypatch, q_lens, layout, mode, qk_dtype, scale_dtype,
                                         block_size):
    """The Gluon phase 1 (int8 and fp8 decode) writes the Triton kernel's logits: same indices
    and score bits, for both scale types, pages of one and of several tiles, both masks, BSND
    and TND, with a cache strided along the block axis; and it did run. fp8 one-token calls
    also as large ones run them, at two CTAs per worker; one-token calls with and without work
    sharing."""
    import dataclasses
    pytest.importorskip("triton.experimental.gluon")
    from custom_ops.backends.cuda import configs, indexer_logits_gluon
    runs = []
    real = indexer_logits_gluon.launch_logits
    monkeypatch.setattr(indexer_logits_gluon, "launch_logits",
                        lambda *a, **k: runs.append(k.get("ctas", 1)) or real(*a, **k))
    args, kwargs = make_indexer_inputs(q_lens=q_lens, k_lens=[9000, 3000, 700, 130][:len(q_lens)],
                                       layout=layout, qk_dtype=qk_dtype, scale_dtype=scale_dtype,
                                       block_size=block_size, sparse_mode=mode, sparse_count=512,
                                       return_value=True, device="cuda", seed=5)
    two_ctas = qk_dtype == torch.float8_e4m3fn and max(q_lens) == 1
    outs = []
    for stages, two, steal in [(0, 0, 0), (5, 0, 0), (5, 0, 1)] + (
            [(5, 1, 0), (5, 1, 1)] if two_ctas else []):
        for key, lc in list(configs.LOGITS.items()):
            two_here = two if key == ("fp8", "single") else 0
            monkeypatch.setitem(configs.LOGITS, key, dataclasses.replace(
                lc, gluon_stages=stages, gluon_two_ctas_keys=two_here, gluon_steal_keys=steal))
        poison()
        outs.append(op(*args, **kwargs))
        assert_indexer_close(*outs[-1], args, kwargs)
    assert runs, "the Gluon kernel did not run"
    assert not two_ctas or 2 in runs, "the Gluon kernel did not run as two CTAs per worker"
    for out in outs[1:]:
        assert torch.equal(outs[0][0], out[0]) and torch.equal(outs[0][1], out[1])


# uneven: a few units per pair, rows of every length; long: ~15 units per pair (most of a
# pair's parts its own, the tail shared out: parts are taken in every call)
SHARING_LENS = {"uneven": [65536, 40000, 65536, 3000, 65536, 20000, 100, 65536, 50000, 0, 65536,
                           9000],
                "long": [65536] * 28 + [30000, 1000, 65000, 64]}


@pytest.mark.parametrize("lens", sorted(SHARING_LENS))
@pytest.mark.parametrize("qk_dtype", [torch.int8, torch.float8_e4m3fn], ids=["int8", "fp8"])
def test_gluon_work_sharing_gives_the_same_bits(monkeypatch, qk_dtype, lens):
    """One-token calls of several units per pair: pairs done with their share take parts of
    others' (a taken part may be scored twice, to the same bits). Ten calls with work sharing
    equal the call without it and the Triton kernel's, bit for bit, and in the long rows' calls
    some pair took parts (the kernel counts them after each pair's (E, P) words)."""
    import dataclasses
    pytest.importorskip("triton.experimental.gluon")
    from custom_ops.backends.cuda import configs, indexer_logits_gluon, plans
    steals = []
    real = indexer_logits_gluon.launch_logits
    monkeypatch.setattr(indexer_logits_gluon, "launch_logits",
                        lambda *a, **k: steals.append(k.get("steal")) or real(*a, **k))
    k_lens = SHARING_LENS[lens]
    args, kwargs = make_indexer_inputs(q_lens=[1] * len(k_lens), k_lens=k_lens, qk_dtype=qk_dtype,
                                       sparse_count=2048, return_value=True, device="cuda", seed=3)
    fp8 = qk_dtype == torch.float8_e4m3fn
    key = ("fp8" if fp8 else "int8", "single")
    outs = []
    for stages, steal, calls in [(0, 0, 1), (5, 0, 1), (5, 1, 10)]:
        # (fp8 shares work at two CTAs per worker only)
        monkeypatch.setitem(configs.LOGITS, key, dataclasses.replace(
            configs.LOGITS[key], gluon_stages=stages, gluon_steal_keys=steal,
            gluon_two_ctas_keys=1 if fp8 else 0))
        for _ in range(calls):
            poison()
            plans.clear()  # the full path each call, so that its buffer is seen here
            outs.append(op(*args, **kwargs))
    assert_indexer_close(*outs[0], args, kwargs)
    shared = steals[-10:]
    assert all(t is not None for t in shared), "the Gluon kernel did not run with work sharing"
    taken = sum(int(t[2 * t.numel() // 3:].sum()) for t in shared)
    assert taken > 0 or lens != "long", "no pair took a part in ten calls"
    for out in outs[1:]:
        assert torch.equal(outs[0][0], out[0]) and torch.equal(outs[0][1], out[1])


@pytest.mark.parametrize("ties", [False, True], ids=["random", "ties"])
@pytest.mark.parametrize("q_lens", [[1], [1, 1, 1, 1], [2, 1, 2, 1, 1, 1]], ids=str)
def test_topk_options_give_the_same_bits(monkeypatch, q_lens, ties):
    """The top-k's tuning options (bits of the bisected threshold, bits per bisection step,
    warps of the threshold kernel, programmatic dependent launches (of all of phase 2, or of
    its kernels after the threshold), the ordering: buckets
    (coarse or fine groups; a 1-bit threshold sends rows to the exact fallback; a rank grid of
    only k slots, whose programs then loop over the slots past it; place and rank in one
    launch, by one program a row or one a segment) or torch.sort)
    change how the candidates are found and ordered, never the result."""
    import dataclasses
    from custom_ops.backends.cuda import configs
    k_lens = [20000, 9000, 5000, 3000, 100, 0][:len(q_lens)]
    args, kwargs = make_indexer_inputs(q_lens=q_lens, k_lens=k_lens, sparse_count=2048,
                                       return_value=True, device="cuda", seed=9, ties=ties)
    outs = []
    sort = dict(bucket_max_rows=0)
    for bits, step, pdl, order in (
            (32, 1, False, sort), (20, 1, False, sort), (24, 1, False, sort), (20, 2, False, sort),
            (32, 2, False, sort), (20, 1, True, sort), (20, 1, False, {}), (20, 1, True, {}),
            (20, 1, True, dict(buckets=16, bucket_block=64, bucket_block_j=16)),
            (32, 2, False, dict(buckets=2, bucket_block=128, bucket_block_j=8)),
            (1, 1, False, dict(buckets=4096, bucket_block=16, candidate_block=64)),
            (20, 1, False, dict(threshold_warps=1)), (20, 2, False, dict(threshold_warps=2)),
            (20, 1, False, dict(sort, threshold_warps=4)), (1, 1, False, sort),
            (20, 1, False, dict(threshold_per_warp=False)),
            (20, 1, False, dict(rank_slots_past_k=0)),  # rank programs loop past the grid
            (20, 1, False, dict(rank_slots_past_k=0, buckets=16, bucket_block=16)),
            (20, 1, False, dict(sort, threshold_per_warp=False, threshold_warps=4)),
            (20, 1, False, dict(place_rank_rows=1)),  # place and rank in one launch
            (20, 1, True, dict(place_rank_rows=1, place_rank_programs=1, place_rank_row_programs=1,
                               place_rank_block=128)),  # one program a row
            (20, 1, False, dict(place_rank_rows=1, place_rank_programs=1)),  # two: the row floor
            (20, 1, False, dict(place_rank_rows=1, place_rank_programs=1 << 20,
                                place_rank_tile=16, buckets=16)),  # 1 of each segment a step
            (1, 1, False, dict(place_rank_rows=1, place_rank_programs=1 << 20)),  # fallback
            (20, 1, False, dict(phase2_pdl_max_rows=64)),
            (20, 1, False, dict(sort, phase2_pdl_max_rows=64))):
        monkeypatch.setattr(configs, "TOPK", dataclasses.replace(
            configs.TOPK, threshold_bits=bits, threshold_step=step, pdl=pdl, pdl_max_rows=0,
            **{"phase2_pdl_max_rows": 0, **order}))
        poison()
        outs.append(op(*args, **kwargs))
    assert_indexer_close(*outs[0], args, kwargs, exact=ties)
    for out in outs[1:]:
        assert torch.equal(out[0], outs[0][0]) and torch.equal(out[1], outs[0][1])


def _threshold_counts(logits, n, k, warps):
    """Run the threshold kernel over rows of n scores (each followed by phase 1's sample copy):
    how many scores of each row reach its t0."""
    from custom_ops.backends.cpu import pack_scores  # its high word: the float order as int32
    from custom_ops.backends.cuda import configs
    from custom_ops.backends.cuda.topk import _indexer_threshold_kernel
    rows, stride = logits.shape
    dev = logits.device
    ask = torch.full((rows,), n, dtype=torch.int32, device=dev)
    meta = torch.zeros(1024, dtype=torch.int32, device=dev)  # q_block 0: every row scheduled
    err = torch.zeros(1, dtype=torch.int32, device=dev)
    thr = torch.empty((rows, 4), dtype=torch.int32, device=dev)
    cap = configs.candidate_slots(k)
    ns = configs.threshold_samples(n, configs.TOPK)
    _indexer_threshold_kernel[(rows,)](
        logits, stride, thr, thr, ask, ask, meta, err, rows, 1, rows, n, k,
        configs.target_candidates(k, cap), 1, CAUSAL=True, TND=False, HAS_ASQ=False,
        LEADING_ZERO=False, NS=ns, BITS=20, STEP=1, WARPS=warps, NB=0, BLOCK_B=16, PDL=False,
        num_warps=max(warps, 8))
    mono = pack_scores(logits[:, :n], torch.zeros(n, dtype=torch.int64, device=dev)) >> 32
    return (mono >= thr[:, 1:2]).sum(1)


def _rows_with_sample(scores):
    from custom_ops.backends.cuda import configs
    rows, n = scores.shape
    every = configs.SAMPLE_EVERY
    logits = torch.zeros((rows, n + configs.sample_columns(n)), device=scores.device)
    logits[:, :n] = scores
    logits[:, n:n + n // every] = scores[:, 0:n:every]
    return logits


def test_threshold_reads_phase_one_sample():
    """The threshold kernel samples long rows from the copy of every SAMPLE_EVERY-th score that
    phase 1 writes after each row: on rows of 64K random scores its t0 is reached by k..CAP
    scores (the row needs no exact fallback). With that copy zeroed, t0 drops to 0 and every
    score reaches it: the kernel does read the copy, not the row."""
    from custom_ops.backends.cuda import configs
    rows, n, k = 16, 65536, 2048
    cap = configs.candidate_slots(k)
    assert -(-n // configs.threshold_samples(n, configs.TOPK)) >= configs.SAMPLE_EVERY
    logits = _rows_with_sample(torch.rand((rows, n), device="cuda"))
    c = _threshold_counts(logits, n, k, 8)
    assert ((c >= k) & (c <= cap)).all(), c.tolist()
    logits[:, n:] = 0.0
    assert (_threshold_counts(logits, n, k, 8) == n).all()


@pytest.mark.parametrize("warps", [0, 8])
@pytest.mark.parametrize("shift", [1.6, 1.7, 1.9])
def test_threshold_near_zero_scores(warps, shift):
    """Rows whose k-th score lies near zero (most scores negative, as ReLU sums under negative
    head weights give): every row's t0 is reached by k..CAP scores, per-warp estimate (8) or
    whole-sample bisection (0). Averaging the per-warp estimates as monotone integers, which
    jump at zero, sent up to a sixth of such rows past CAP, each to the exact fallback."""
    from custom_ops.backends.cuda import configs
    rows, n, k = 96, 65536, 2048
    cap = configs.candidate_slots(k)
    g = torch.Generator(device="cuda").manual_seed(int(shift * 10) + warps)
    scores = torch.randn((rows, n), generator=g, device="cuda") - shift
    c = _threshold_counts(_rows_with_sample(scores), n, k, warps)
    assert ((c >= k) & (c <= cap)).all(), c.tolist()


@pytest.mark.parametrize("distinct", [64, 1, "zeros"])
def test_rows_of_tied_scores(monkeypatch, distinct):
    """64K keys made of `distinct` different vectors, or with 97 % of them zero (their scores
    exactly 0: the ReLU of every head's dot): thousands of keys tie, and the result is the
    golden's, ties to the smaller index. With 64 values the sampled threshold keeps at least k
    candidates in every row (a mean of per-warp estimates once fell between two values above
    the k-th, and such rows took the exact fallback). With one value, or zeros, the k-th score
    is a tie group far larger than the candidate slots: the segments keep only the keys above
    t0 (none, or a few hundred) and the first keys at t0 by index fill the rest, without the
    exact fallback."""
    from custom_ops.backends.cuda import configs
    from custom_ops.backends.cuda import indexer as cuda_indexer
    from custom_ops.backends.cuda.topk import _indexer_segments_kernel
    segments = []
    real = cuda_indexer.launch

    def spy(kernel, grid, *a, **kw):
        if kernel is _indexer_segments_kernel:
            segments.append(a[4])  # candidate counts [rows, G]
        return real(kernel, grid, *a, **kw)
    monkeypatch.setattr(cuda_indexer, "launch", spy)
    args, kwargs = make_indexer_inputs(q_lens=[1] * 4, k_lens=[65536] * 4, sparse_count=2048,
                                       return_value=True, device="cuda", seed=7)
    tie_keys(args, 0 if distinct == "zeros" else distinct, seed=1)
    poison()
    idx, val = op(*args, **kwargs)
    assert_indexer_close(idx, val, args, kwargs)
    above = segments[-1].sum(1)  # keys above each row's threshold
    if distinct == 64:
        assert ((above >= 2048) & (above <= configs.candidate_slots(2048))).all(), above.tolist()
    elif distinct == 1:
        assert (above == 0).all(), above.tolist()
    else:
        assert (above < 2048).all() and (above > 0).all(), above.tolist()
