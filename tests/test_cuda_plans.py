"""Launch plans (custom_ops/backends/cuda/plans.py): what a recording keeps, what a replay
launches, and on the GPU that replayed eager calls compute on their own inputs exactly what the
full path computes.

The CPU tests drive the recorder with a stand-in for Triton's compiled kernel: they check the
addresses a replay hands the launcher, not any kernel."""
import dataclasses

import pytest
import torch

from custom_ops.backends.cuda import launch as L
from custom_ops.backends.cuda import plans
from custom_ops.testing import assert_indexer_close, make_indexer_inputs


class FakeCompiled:
    """What a replay touches of a Triton CompiledKernel; `calls` keeps each launch's grid and
    argument values."""
    function = "fn"
    packed_metadata = "meta"

    def __init__(self):
        self.calls = []

    def launch_metadata(self, grid, stream, *values):
        return None

    def run(self, gx, gy, gz, stream, function, packed, launch_meta, enter, leave, *values):
        self.calls.append(((gx, gy, gz), values))


class FakeDriver:
    class active:
        @staticmethod
        def get_current_device():
            return 0

        @staticmethod
        def get_current_stream(device):
            return 7


@dataclasses.dataclass
class Desc:  # a host TMA descriptor's fields
    base: torch.Tensor
    shape: list
    strides: list
    block_shape: list
    padding: str = "zero"


@pytest.fixture
def fake_triton(monkeypatch):
    class Knobs:
        class runtime:
            launch_enter_hook = launch_exit_hook = None
    monkeypatch.setattr(plans, "knobs", Knobs)
    monkeypatch.setattr(plans, "driver", FakeDriver)


def _record(roots, body):
    """body(recorder) inside a recording of `roots`; the plan, or None."""
    with L.recording(plans.Recorder(roots)) as rec:
        body(rec)
    return rec.plan()


def test_replay_writes_each_pointer_from_its_own_call(fake_triton):
    x = torch.zeros(64, dtype=torch.int32)
    y = torch.zeros(8, 16, dtype=torch.float32)
    kernel = FakeCompiled()

    def body(rec):
        ws = L.empty((100,), torch.int64, "cpu")
        ws2 = L.empty((3,), torch.int32, "cpu")
        # x itself, a view 4 elements in, a descriptor over y's rows 2.., both workspaces
        rec.launched((kernel, (3, 1, 1), (x, x[4:], 5, None, ws, Desc(y[2:], [6, 16], [16, 1],
                                                                          [1, 16]), ws2, 2.5)))
    plan = _record([x, y, None], body)
    assert plan is not None and plan.total == 1024 + 512  # 800 and 12 bytes, 512-byte steps
    x2, y2 = torch.zeros_like(x), torch.zeros_like(y)
    kernel.calls.clear()
    plan.run([x2, y2, None], "cpu")
    (grid, values), = kernel.calls
    assert grid == (3, 1, 1)
    assert values[0] == x2.data_ptr() and values[1] == x2.data_ptr() + 16
    assert values[2:4] == (5, None) and values[7] == 2.5
    assert values[6] - values[4] == 1024
    d = values[5]
    assert d.base.data_ptr() == y2.data_ptr() + 2 * 16 * 4
    assert (d.shape, d.strides, d.padding) == ((6, 16), (16, 1), "zero")


def test_a_pointer_in_no_region_or_an_uncompiled_launch_records_nothing(fake_triton):
    x = torch.zeros(64)
    stray = torch.zeros(4)  # made by a torch operation, not a region
    assert _record([x], lambda rec: rec.launched((FakeCompiled(), (1, 1, 1), (stray,)))) is None
    assert _record([x], lambda rec: rec.launched(None)) is None
    assert _record([x], lambda rec: rec.launched((FakeCompiled(), (1, 1, 1), (x,)))) is not None


def test_torch_steps_replay_on_views_of_the_new_workspace(fake_triton):
    def body(rec):
        a = L.empty((2, 5), torch.int32, "cpu")
        b = L.empty((2, 5), torch.int64, "cpu")
        a.copy_(torch.arange(10).view(2, 5))
        L.torch_step(lambda u, v: v.copy_(u * 3), a, b)
        assert b.tolist() == [[0, 3, 6, 9, 12], [15, 18, 21, 24, 27]]
    plan = _record([], body)
    seen = []
    step = plan.steps[0]
    step.fn = lambda u, v: seen.append((u.shape, u.dtype, v.shape, v.dtype, u.data_ptr(),
                                        v.data_ptr()))
    plan.run([], "cpu")
    (us, ud, vs, vd, up, vp), = seen
    assert (us, ud, vs, vd) == ((2, 5), torch.int32, (2, 5), torch.int64)
    assert vp - up == 512


def test_another_threads_allocations_are_not_this_calls():
    import threading
    with L.recording(plans.Recorder([])) as rec:
        other = threading.Thread(target=lambda: L.empty((10,), torch.int32, "cpu"))
        other.start()
        other.join()
        mine = L.empty((3,), torch.int32, "cpu")
    assert rec.regions == [mine]


def test_call_records_the_second_time_and_gives_up_after_three_failures(fake_triton, monkeypatch):
    monkeypatch.setattr(plans, "_plans", {})
    monkeypatch.setattr(plans, "_failed", {})
    x = torch.zeros(8)
    kernel = FakeCompiled()
    runs = []

    def run(compiled):
        runs.append(1)
        if L._recorder() is not None:
            L._recorder().launched((kernel, (1, 1, 1), (x,)) if compiled else None)
    plans.call("k", [x], "cpu", lambda: run(False))  # Triton compiled it: nothing held
    assert "k" not in plans._plans
    plans.call("k", [x], "cpu", lambda: run(True))
    assert isinstance(plans._plans["k"], plans.Plan)
    plans.call("k", [x], "cpu", lambda: run(True))  # replayed: run() not called
    assert len(runs) == 2 and len(kernel.calls) == 1
    for i in range(3):
        plans.call("never", [x], "cpu", lambda: run(False))
    assert plans._plans["never"] is None
    plans.call("never", [x], "cpu", lambda: run(False))  # the full path, unrecorded
    assert len(runs) == 6


# ---- on the GPU: replayed calls against the full path and the golden ----

cuda = pytest.mark.skipif(not torch.cuda.is_available(),
                          reason="needs an NVIDIA GPU (none on this machine)")
op = torch.ops.custom.npu_vllm_quant_lightning_indexer
FP8 = torch.float8_e4m3fn
CASES = {
    "int8-one-token": dict(q_lens=[1, 1, 1], k_lens=[9000, 2500, 0]),
    "int8-stacked": dict(q_lens=[4, 3, 1], k_lens=[5000, 700, 3000]),
    "fp8-pair": dict(q_lens=[2, 2], k_lens=[6000, 100], qk_dtype=FP8,
                     scale_dtype=torch.float32),
    "sort-order": dict(q_lens=[2] * 40, k_lens=[3000] * 40),  # 80 rows: the sort order
    "tnd-prefill": dict(q_lens=[40, 9], k_lens=[3000, 600], layout="TND"),
    "block-16-cmp-4": dict(q_lens=[1, 1], k_lens=[20000, 4000], block_size=16, cmp_ratio=4),
}


def _poisoned_call(args, kwargs):
    torch.empty(1 << 26, dtype=torch.int32, device="cuda").fill_(0x7FC00001)
    return op(*args, **kwargs)


@cuda
@pytest.mark.parametrize("with_metadata", [False, True])
@pytest.mark.parametrize("case", list(CASES))
def test_replayed_calls_equal_the_full_path_on_their_own_inputs(case, with_metadata, monkeypatch):
    from custom_ops.backends.cuda import indexer as cuda_indexer
    launched = []
    real = cuda_indexer.launch
    monkeypatch.setattr(cuda_indexer, "launch", lambda *a, **k: (launched.append(a[0]),
                                                                 real(*a, **k)))
    for seed in range(4):  # new inputs each time (same signature): compile, record, replay x2
        args, kwargs = make_indexer_inputs(**CASES[case], sparse_count=512, return_value=True,
                                           device="cuda", seed=seed)
        if with_metadata:
            from test_indexer_cuda import metadata_for
            kwargs["metadata"] = metadata_for(kwargs, max(CASES[case]["q_lens"]))
        launched.clear()
        out = _poisoned_call(args, kwargs)
        assert_indexer_close(*out, args, kwargs)
        if seed >= 2:
            assert not launched, f"call {seed} took the full path: {launched}"
        plans.enabled = False
        try:
            full = _poisoned_call(args, kwargs)
        finally:
            plans.enabled = True
        assert torch.equal(out[0], full[0]) and torch.equal(out[1], full[1])
    assert sum(isinstance(v, plans.Plan) for v in plans._plans.values()) == 1


@cuda
def test_another_alignment_is_another_plan():
    """Key scales 4 bytes off their usual alignment: Triton specialises on 16-byte alignment and
    the paired-scale and TMA reads test it, so the signature differs and the call is right."""
    args, kwargs = make_indexer_inputs(q_lens=[1, 1], k_lens=[5000, 3000], sparse_count=256,
                                       return_value=True, device="cuda", seed=1)
    for _ in range(3):
        out = _poisoned_call(args, kwargs)
    ks = args[4]
    shifted = torch.empty(ks.numel() + 2, dtype=ks.dtype, device="cuda")[2:].view(ks.shape)
    shifted.copy_(ks)
    moved = (*args[:4], shifted)
    for _ in range(3):
        out2 = _poisoned_call(moved, kwargs)
        assert torch.equal(out[0], out2[0]) and torch.equal(out[1], out2[1])
    assert sum(isinstance(v, plans.Plan) for v in plans._plans.values()) == 2


@cuda
def test_chunked_calls_are_not_planned(monkeypatch):
    """A call in chunks (SPEC §1.6) is never recorded: the recording would hold every chunk's
    workspace at once, and a replay would allocate them all in one block."""
    from custom_ops.backends.cuda import configs
    from custom_ops.backends.cuda import indexer as cuda_indexer
    args, kwargs = make_indexer_inputs(q_lens=[1] * 6, k_lens=[3000] * 6, sparse_count=256,
                                       return_value=True, device="cuda", seed=2)
    whole = _poisoned_call(args, kwargs)
    cap = kwargs["block_table"].shape[1] * args[1].shape[1]
    monkeypatch.setattr(cuda_indexer, "WORKSPACE_BYTES", configs.scratch_bytes(2, cap, 256))
    plans.clear()
    for _ in range(4):
        out = _poisoned_call(args, kwargs)
        assert torch.equal(out[0], whole[0]) and torch.equal(out[1], whole[1])
    assert not plans._plans and not plans._failed
