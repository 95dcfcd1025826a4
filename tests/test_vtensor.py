"""Virtual-memory KV append (SPEC §3) on every available device: values, no copies, safety, memory.

CPU always runs (the mmap driver); CUDA and NPU cases skip without a GPU / an Ascend NPU (the
NPU ones have never run: no NPU exists where this package is developed). CUDA-only cases
(graphs, the driver's own memory counter, the soak) are in test_vtensor_cuda.py.
"""
import gc
import sys

import pytest
import torch
from hypothesis import HealthCheck, given, settings, strategies as st

from custom_ops import vtensor
from custom_ops.backends import npu

append = torch.ops.custom.vtensor_append
append_ = torch.ops.custom.vtensor_append_
reserve_one = torch.ops.custom.vtensor_reserve_one_token

DEVICES = [
    "cpu",
    pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(),
                                                  reason="needs a CUDA GPU")),
    pytest.param("npu", marks=pytest.mark.skipif(
        not npu.available(), reason="needs an Ascend NPU with torch_npu and the op package")),
]
LAYOUTS = ["per_sequence", "sequence_major"]
CHUNK = 64 << 10  # small chunks so short tests cross many chunk boundaries


@pytest.fixture(params=DEVICES)
def device(request):
    yield request.param
    gc.collect()
    vtensor.synchronize()
    assert vtensor.memory_stats(request.param)["physical_bytes"] == 0, "a test leaked memory"


def _empty(device, layout="per_sequence", batch=3, heads=2, head_dim=16, capacity=4096,
           dtype=torch.float32, chunk_bytes=CHUNK):
    return vtensor.empty(batch, heads, head_dim, capacity=capacity, dtype=dtype, device=device,
                         chunk_bytes=chunk_bytes, layout=layout)


def _chunk(device):
    """The chunk a cache made by ``_empty`` maps: CHUNK rounded up to the driver's granularity."""
    granularity = vtensor.device_memory(device).granularity
    return -(-CHUNK // granularity) * granularity


def _tokens(device, batch=3, steps=1, heads=2, head_dim=16, dtype=torch.float32):
    return torch.randn(batch, steps, heads, head_dim, device=device).to(dtype)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
# The device fixture only checks for leaks after all examples, so sharing it is intended.
@settings(max_examples=8, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(st.integers(0, 300), min_size=1, max_size=12))
def test_random_appends_equal_cat(device, layout, dtype, steps):
    cache = _empty(device, layout, dtype=dtype)
    reference = cache.clone()
    for count in steps:
        states = _tokens(device, steps=count, dtype=dtype)
        cache = append(cache, states)
        reference = torch.cat([reference, states], 1)
        assert torch.equal(cache, reference), f"after appending {count} tokens"


@pytest.mark.parametrize("layout", LAYOUTS)
def test_plain_cache_is_copied_once_then_never(device, layout):
    vtensor.DEFAULTS["layout"], saved = layout, vtensor.DEFAULTS["layout"]
    try:
        plain = _tokens(device, steps=5)
        cache = reserve_one(plain, _tokens(device))
    finally:
        vtensor.DEFAULTS["layout"] = saved
    assert cache.data_ptr() != plain.data_ptr()
    reference = torch.cat([plain, cache[:, 5:]], 1)
    pointer = cache.data_ptr()
    for step in range(200):
        states = _tokens(device)
        cache = reserve_one(cache, states)
        reference = torch.cat([reference, states], 1)
        assert cache.data_ptr() == pointer, f"storage moved at step {step}"
    assert torch.equal(cache, reference)


@pytest.mark.parametrize("batch", [1, 3])
def test_empty_plain_cache_starts_a_virtual_one(device, batch):
    """torch gives an empty contiguous [B, 0, H, D] stride(0) = H*D: not a virtual region."""
    plain = torch.zeros(batch, 0, 2, 16, device=device)
    states = _tokens(device, batch=batch, steps=3)
    cache = append(plain, states)
    assert torch.equal(cache, states) and vtensor.memory_stats(device)["mapped_bytes"] > 0
    pointer = cache.data_ptr()
    more = _tokens(device, batch=batch)
    cache = append(cache, more)
    assert cache.data_ptr() == pointer and torch.equal(cache, torch.cat([states, more], 1))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_layout_strides(device, layout):
    cache = append(_empty(device, layout, batch=4, heads=2, head_dim=8),
                   _tokens(device, 4, 3, 2, 8))
    if layout == "per_sequence":
        assert cache.stride()[1:] == (16, 8, 1) and cache.stride(0) >= 4096 * 16
    else:
        assert cache.stride() == (16, 4 * 16, 8, 1)


def test_stale_view_is_never_overwritten(device):
    base = append(_empty(device), _tokens(device, steps=4))
    longer = append(base, _tokens(device, steps=3))
    kept = longer.clone()
    forked = append(base, _tokens(device, steps=2))  # base is stale: longer shows 3 more tokens
    assert torch.equal(longer, kept), "appending to a stale view overwrote a live view"
    assert torch.equal(forked[:, :4], base)
    assert forked.data_ptr() != longer.data_ptr()
    assert torch.equal(append(longer, _tokens(device)[:, :0]), kept)  # the live view is still live


def test_per_step_shortcut_keeps_semantics(device):
    """The last result is recognised without the general checks: in place, one entry per cache."""
    from custom_ops.vtensor.cache import RESULTS
    before = len(RESULTS)
    cache = append(_empty(device), _tokens(device, steps=4))
    pointer, reference = cache.data_ptr(), cache.clone()
    for _ in range(50):
        states = _tokens(device)
        cache = append(cache, states)
        reference = torch.cat([reference, states], 1)
    assert cache.data_ptr() == pointer and torch.equal(cache, reference)
    assert len(RESULTS) == before + 1, "the shortcut must hold one entry per cache, not per step"
    # A result whose states do not fit gets the general path's errors, not a silent write.
    with pytest.raises(TypeError, match="states dtype must equal"):
        append(cache, _tokens(device, dtype=torch.bfloat16))
    with pytest.raises(ValueError, match="must match cache in B"):
        append(cache, _tokens(device, batch=2))
    with pytest.raises(ValueError, match="states must be 4-D"):
        append(cache, _tokens(device)[0])
    # A result whose metadata was changed in place is no longer taken for the live view.
    bent = append(cache, _tokens(device))
    bent.unsqueeze_(0)
    with pytest.raises(ValueError, match="cache must be 4-D"):
        append(bent, _tokens(device))
    del cache, bent
    gc.collect()
    assert len(RESULTS) == before, "a dead cache must leave no entry behind"


def test_shortcut_result_after_stale_append_stays_intact(device):
    """Appending to an older result copies; the last result keeps its shortcut and its tokens."""
    first = append(_empty(device), _tokens(device, steps=3))
    last = append(first, _tokens(device, steps=2))
    kept = last.clone()
    forked = append(first, _tokens(device))  # stale: a new cache
    assert forked.data_ptr() != last.data_ptr() and torch.equal(last, kept)
    states = _tokens(device)
    grown = append(last, states)
    assert grown.data_ptr() == last.data_ptr()
    assert torch.equal(grown, torch.cat([kept, states], 1))


def test_result_repointed_at_another_cache_is_not_trusted(device):
    """A result re-pointed with set_() at another cache's live view is that cache's live view:
    appending to it grows that cache, and the other cache's old result then counts as stale
    (copied), so no token a held view shows is overwritten."""
    a = append(_empty(device), _tokens(device, steps=2))
    b = append(_empty(device), _tokens(device, steps=2))
    b_tokens = b.clone()
    a.set_(b)
    states = _tokens(device)
    grown = append(a, states)
    assert torch.equal(grown, torch.cat([b_tokens, states], 1))
    kept = grown.clone()
    other = append(b, _tokens(device))  # b is stale now: copied, `grown` untouched
    assert torch.equal(grown, kept) and other.data_ptr() != grown.data_ptr()


def test_truncate_rolls_back_in_place(device):
    cache = append(_empty(device), _tokens(device, steps=10))
    accepted = cache[:, :7].clone()
    rolled = vtensor.truncate(cache, 7)
    assert torch.equal(rolled, accepted)
    states = _tokens(device, steps=2)
    grown = append(rolled, states)
    assert grown.data_ptr() == cache.data_ptr(), "rollback must not copy"
    assert torch.equal(grown, torch.cat([accepted, states], 1))
    with pytest.raises(ValueError, match="truncate: length must be in"):
        vtensor.truncate(grown, 10)


def test_exhaustion_raises_and_cache_stays_usable(device):
    cache = append(_empty(device, capacity=64), _tokens(device, steps=60))
    before = vtensor.memory_stats(device)
    with pytest.raises(vtensor.ReservationExhaustedError, match="66 tokens needed.*holds"):
        append(cache, _tokens(device, steps=6))
    assert vtensor.memory_stats(device) == before
    states = _tokens(device, steps=4)
    full = append(cache, states)
    assert torch.equal(full[:, 60:], states) and torch.equal(full[:, :60], cache)


def test_memory_budget_raises_and_cache_stays_usable(device):
    cache = append(_empty(device, capacity=1 << 16), _tokens(device, steps=1))
    in_use = vtensor.memory_stats(device)["physical_bytes"]
    vtensor.set_memory_budget(in_use, device)
    try:
        row_tokens = _chunk(device) // (2 * 16 * 4)
        with pytest.raises(vtensor.VTensorOutOfMemoryError, match="budget of .* exhausted"):
            append(cache, _tokens(device, steps=2 * row_tokens))
        assert vtensor.memory_stats(device)["physical_bytes"] == in_use
        states = _tokens(device, steps=5)
        grown = append(cache, states)
        assert torch.equal(grown[:, 1:], states)
    finally:
        vtensor.set_memory_budget(None, device)


def test_out_of_memory_is_a_torch_oom():
    assert issubclass(vtensor.VTensorOutOfMemoryError, torch.OutOfMemoryError)


def test_statistics_track_growth_and_return_to_zero(device):
    cache = _empty(device, batch=2, heads=2, head_dim=16)  # 128 B per token and sequence
    stats = vtensor.memory_stats(device)
    assert stats["reservations"] == 1 and stats["reserved_bytes"] >= 2 * 4096 * 128
    chunk = _chunk(device)
    for _ in range(40):
        cache = append(cache, _tokens(device, 2, 50))
        live = 2 * cache.shape[1] * 128
        mapped = vtensor.memory_stats(device)["mapped_bytes"]
        assert live <= mapped <= live + 2 * chunk, "mapped must follow the live length by a chunk"
    del cache
    gc.collect()
    vtensor.synchronize()
    assert all(v in (0, None) for v in vtensor.memory_stats(device).values())


def test_inplace_form_writes_at_device_positions(device):
    full = vtensor.capacity_view(_empty(device, batch=3, capacity=512))
    reference = torch.zeros(3, 512, 2, 16, device=device)
    positions = torch.tensor([0, 5, 100], device=device)
    for _ in range(30):
        states = _tokens(device, steps=3)
        vtensor.resize_backing(full, [int(p) + 3 for p in positions.tolist()])
        append_(full, states, positions)
        for b, p in enumerate(positions.tolist()):
            reference[b, p:p + 3] = states[b]
        positions += 3
        for b, p in enumerate(positions.tolist()):
            assert torch.equal(full[b, :p], reference[b, :p]), f"sequence {b}"
    vtensor.check(full)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_inplace_writes_past_backing_are_dropped_and_reported(device, layout):
    full = vtensor.capacity_view(_empty(device, layout, batch=2, capacity=4096))
    vtensor.resize_backing(full, [10, 10])
    mapped = vtensor.memory_stats(device)["mapped_bytes"]
    backed = vtensor.lookup(full).mapped_tokens()[0]
    states = _tokens(device, batch=2, steps=4)
    append_(full, states, torch.tensor([backed - 2, -3], device=device))
    assert torch.equal(full[0, backed - 2:backed], states[0, :2])
    assert torch.equal(full[1, :1], states[1, 3:])
    assert vtensor.memory_stats(device)["mapped_bytes"] == mapped
    with pytest.raises(vtensor.DroppedWritesError, match="dropped 5 token writes"):
        vtensor.check(full)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_inplace_before_any_resize_backing_drops_and_reports(device, layout):
    """A fresh cache has no backing its limits admit yet: every write is dropped, none faults."""
    full = vtensor.capacity_view(_empty(device, layout, batch=2, capacity=4096))
    append_(full, _tokens(device, batch=2, steps=3), torch.tensor([0, 5], device=device))
    with pytest.raises(vtensor.DroppedWritesError, match="dropped 6 token writes"):
        vtensor.check(full)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_inplace_on_a_functional_result_writes_its_backed_tokens(device, layout):
    """The functional ops keep the limits in step with the backing they map."""
    cache = append(_empty(device, layout, batch=2), _tokens(device, batch=2, steps=5))
    expected = cache.clone()
    states = _tokens(device, batch=2, steps=2)
    append_(cache, states, torch.tensor([1, 3], device=device))
    expected[0, 1:3], expected[1, 3:5] = states[0], states[1]
    assert torch.equal(cache, expected)
    vtensor.check(cache)


def test_inplace_on_a_slice_of_a_virtual_cache_is_refused(device):
    full = vtensor.capacity_view(_empty(device, batch=2, capacity=4096))
    vtensor.resize_backing(full, 10)
    with pytest.raises(ValueError, match="storage offset 32, strides"):
        append_(full[:, 1:], _tokens(device, batch=2), torch.tensor([0, 0], device=device))


def test_failed_create_frees_the_reservation_once(monkeypatch):
    memory = vtensor.device_memory("cpu")

    def fail(*args):
        raise vtensor.DriverError("wrap refused (test)")
    monkeypatch.setattr(memory.driver, "wrap", fail)
    with pytest.raises(vtensor.DriverError, match="wrap refused"):
        _empty("cpu")
    gc.collect()
    vtensor.synchronize("cpu")
    assert vtensor.memory_stats("cpu")["reserved_bytes"] == 0


def test_resize_backing_keeps_device_limits_in_step(device):
    """limits is copied only when the backing changed, and always equals the mapped tokens."""
    chunk_tokens = _chunk(device) // 128
    full = vtensor.capacity_view(_empty(device, batch=2, capacity=4 * chunk_tokens))
    virtual = vtensor.lookup(full)
    copies = 0
    for lengths in ([3, 3], [3, 3], [chunk_tokens + 1, 3], [chunk_tokens + 1, 3], [5, 5]):
        before, version = list(virtual.limits_host), virtual.limits._version
        vtensor.resize_backing(full, lengths)
        assert virtual.limits.tolist() == virtual.mapped_tokens() == virtual.limits_host
        copied = virtual.limits._version != version  # every copy_ into limits bumps its version
        assert copied == (virtual.limits_host != before), lengths
        copies += copied
    assert 1 <= copies < 5


def test_resize_backing_shrinks_after_the_fence(device):
    chunk_tokens = _chunk(device) // 128
    full = vtensor.capacity_view(_empty(device, batch=2, capacity=4 * chunk_tokens))
    vtensor.resize_backing(full, [3 * chunk_tokens - 5] * 2)
    grown = vtensor.memory_stats(device)["mapped_bytes"]
    vtensor.resize_backing(full, [5, 3 * chunk_tokens - 5])
    vtensor.synchronize(device)
    assert vtensor.memory_stats(device)["mapped_bytes"] == grown - 2 * _chunk(device)
    vtensor.resize_backing(full, [3 * chunk_tokens - 5] * 2)
    assert vtensor.memory_stats(device)["mapped_bytes"] == grown


def test_next_chunk_is_mapped_once_the_last_is_full(device):
    chunk_tokens = _chunk(device) // 128
    cache = append(_empty(device, batch=2, capacity=4 * chunk_tokens),
                   _tokens(device, 2, chunk_tokens - 1))
    before = vtensor.memory_stats(device)["mapped_bytes"]
    cache = append(cache, _tokens(device, 2))  # fills the first chunk of both sequences
    assert vtensor.memory_stats(device)["mapped_bytes"] == before + 2 * _chunk(device)
    cache = append(cache, _tokens(device, 2))  # needs no driver call: already mapped
    assert vtensor.memory_stats(device)["mapped_bytes"] == before + 2 * _chunk(device)


def test_plain_inplace_drops_out_of_range(device):
    cache = torch.zeros(2, 6, 2, 16, device=device)
    states = _tokens(device, batch=2, steps=4)
    append_(cache, states, torch.tensor([4, -2], device=device, dtype=torch.int32))
    assert torch.equal(cache[0, 4:], states[0, :2]) and torch.equal(cache[1, :2], states[1, 2:])
    assert int((cache != 0).any(-1).any(-1).sum()) == 4


@pytest.mark.parametrize("op_name", ["vtensor_append", "vtensor_reserve_one_token"])
@pytest.mark.parametrize("virtual", [False, True], ids=["plain", "virtual"])
def test_opcheck_functional(device, op_name, virtual):
    # test_aot_dispatch_dynamic is left out on purpose: the result is a view of the input's
    # storage (Tensor(a) -> Tensor(a)), and functionalization rejects custom ops whose outputs
    # alias inputs. Compiled graphs use vtensor_append_, whose opcheck runs in full below.
    cache = _tokens(device, steps=5)
    if virtual:
        cache = append(_empty(device), cache)
    torch.library.opcheck(getattr(torch.ops.custom, op_name), (cache, _tokens(device)),
                          test_utils=("test_schema", "test_autograd_registration",
                                      "test_faketensor"))


def test_opcheck_inplace(device):
    # opcheck clones its inputs, and a capacity view spans unbacked memory that must not be
    # read, so it checks the op on an ordinary cache; the virtual path is checked by value above.
    positions = torch.tensor([0, 3, 7], device=device)
    torch.library.opcheck(append_, (_tokens(device, steps=9), _tokens(device, steps=2), positions))


def test_compile_inplace_form(device):
    full = vtensor.capacity_view(_empty(device, batch=2, capacity=256))
    vtensor.resize_backing(full, 32)
    positions = torch.tensor([0, 4], device=device)

    @torch.compile(fullgraph=True, backend="inductor")
    def step(cache, states, positions):
        append_(cache, states, positions)
        positions.add_(states.shape[1])

    reference = torch.zeros(2, 32, 2, 16, device=device)
    for _ in range(4):
        states = _tokens(device, batch=2, steps=3)
        for b, p in enumerate(positions.tolist()):
            reference[b, p:p + 3] = states[b]
        step(full, states, positions)
    assert positions.tolist() == [12, 16]
    assert torch.equal(full[0, :12], reference[0, :12])
    assert torch.equal(full[1, 4:16], reference[1, 4:16])
    vtensor.check(full)


@pytest.mark.parametrize("bad, error, match", [
    (lambda d: (torch.zeros(3, 4, 2, device=d), _tokens(d)), ValueError,
     "key_cache must be 4-D"),
    (lambda d: (_tokens(d, steps=4), _tokens(d, batch=2)), ValueError,
     "must match key_cache in B"),
    (lambda d: (_tokens(d, steps=4), _tokens(d, dtype=torch.bfloat16)), TypeError,
     "key_states dtype must equal"),
    (lambda d: (_tokens(d, steps=4), _tokens(d, steps=2)), ValueError,
     "key_states must be \\[B, 1, H, D\\]"),
], ids=["cache-rank", "batch-mismatch", "dtype-mismatch", "two-tokens"])
def test_functional_argument_errors(device, bad, error, match):
    with pytest.raises(error, match=match):
        reserve_one(*bad(device))


@pytest.mark.parametrize("positions, error, match", [
    (lambda d: torch.zeros(2, dtype=torch.int64, device=d), ValueError,
     "positions must be \\[B\\]"),
    (lambda d: torch.zeros(3, device=d), TypeError, "positions must be int32 or int64"),
], ids=["positions-shape", "positions-dtype"])
def test_inplace_argument_errors(device, positions, error, match):
    with pytest.raises(error, match=match):
        append_(_tokens(device, steps=8), _tokens(device), positions(device))


def test_inplace_refuses_a_cache_that_repeats_rows(device):
    """An expanded cache (stride 0 on B) would take several sequences' rows in one place."""
    cache = torch.zeros(1, 8, 2, 16, device=device).expand(3, -1, -1, -1)
    with pytest.raises(ValueError, match="must not repeat rows"):
        append_(cache, _tokens(device, batch=3), torch.zeros(3, dtype=torch.int64, device=device))


def test_helpers_reject_ordinary_tensors():
    with pytest.raises(ValueError, match="capacity_view: cache must be a view of a virtual"):
        vtensor.capacity_view(torch.zeros(1, 1, 1, 1))
    with pytest.raises(ValueError, match="layout must be one of"):
        vtensor.empty(1, 1, 1, capacity=1, dtype=torch.float32, device="cpu", layout="paged")


def test_cpu_use_never_loads_accelerator_drivers():
    append(_empty("cpu"), _tokens("cpu"))
    assert "custom_ops.vtensor.cuda_driver" not in sys.modules or torch.cuda.is_available()
    assert "custom_ops.vtensor.npu_driver" not in sys.modules


@pytest.mark.parametrize("batch", [2, 16])
def test_sequence_major_default_chunk_holds_whole_batch_tokens(device, batch):
    """sequence_major's default chunk: max(chunk_bytes, sequence_major_chunk_tokens tokens of
    the batch); mapped grows a chunk at a time and stays within live + one chunk."""
    heads, head_dim = 8, 128  # float32: 4 KiB per token and sequence
    token_bytes = batch * heads * head_dim * 4
    granularity = vtensor.memory.device_memory(device).granularity
    want = max(vtensor.DEFAULTS["chunk_bytes"],
               vtensor.DEFAULTS["sequence_major_chunk_tokens"] * token_bytes)
    chunk = -(-want // granularity) * granularity
    cache = vtensor.empty(batch, heads, head_dim, capacity=256, dtype=torch.float32,
                          device=device, layout="sequence_major")
    before = vtensor.memory_stats(device)["mapped_bytes"]
    for step in range(1, 140):
        cache = append(cache, _tokens(device, batch, 1, heads, head_dim))
        mapped = vtensor.memory_stats(device)["mapped_bytes"] - before + chunk  # + the base's
        live = step * token_bytes
        assert mapped % chunk == 0 and live <= mapped <= live + chunk, (step, mapped)
    del cache
    vtensor.synchronize()


def test_npu_driver_drops_the_owners_of_dead_storages(monkeypatch, request):
    """No NPU here: the driver's bookkeeping alone, over stand-ins for the extension's two ops
    (custom_ops/csrc/npu/vtensor_storage.cpp): an owner lives while its storage does and is
    dropped by the first collect after the storage reports its death."""
    from types import SimpleNamespace

    name = "custom_ops.vtensor.npu_driver"
    if name not in sys.modules:  # (test_cpu_use_never_loads_accelerator_drivers checks that)
        request.addfinalizer(lambda: sys.modules.pop(name, None))
    from custom_ops.vtensor import npu_driver

    freed = []
    fake_ops = SimpleNamespace(
        _vtensor_npu_storage=lambda address, nbytes, device: torch.empty(nbytes, dtype=torch.uint8),
        _vtensor_npu_freed=lambda: [freed.pop() for _ in range(len(freed))])
    monkeypatch.setattr(npu_driver.torch, "ops", SimpleNamespace(custom=fake_ops))
    driver = object.__new__(npu_driver.NpuDriver)  # (its __init__ needs torch_npu and CANN)
    driver.device, driver._owners = torch.device("cpu"), {}

    class Owner:
        dropped = 0

        def __del__(self):
            Owner.dropped += 1
    tensors = [driver.wrap(address, 64, Owner()) for address in (0x1000, 0x2000)]
    driver.collect()
    assert Owner.dropped == 0 and len(tensors) == 2
    freed.append(0x2000)  # what the storage's deleter records when its last view dies
    driver.collect()
    assert Owner.dropped == 1 and list(driver._owners) == [0x1000]
    driver.collect()
    assert Owner.dropped == 1



MIXED_CALLS = {
    "vtensor_append": lambda t: append(t["cache"], t["states"]),
    "vtensor_reserve_one_token": lambda t: reserve_one(t["cache"], t["states"]),
    "vtensor_append_": lambda t: append_(t["cache"], t["states"], t["positions"]),
}


@pytest.mark.parametrize("op, meta", [(op, meta) for op in MIXED_CALLS
                                      for meta in ("cache", "states", "positions")
                                      if meta != "positions" or op == "vtensor_append_"])
def test_calls_mixing_meta_tensors_raise(op, meta):
    """A call with one meta tensor dispatches to the fake kernel: it must raise the op's device
    error, not return an uninitialised CPU tensor (or, in place, do nothing)."""
    tensors = {"cache": torch.zeros(2, 3, 4, 8), "states": torch.ones(2, 1, 4, 8),
               "positions": torch.zeros(2, dtype=torch.int64)}
    tensors[meta] = tensors[meta].to("meta")
    with pytest.raises(ValueError, match="device"):
        MIXED_CALLS[op](tensors)


@pytest.mark.parametrize("bad, match", [
    (lambda: (torch.zeros(2, 3, 4, 8), torch.ones(3, 1, 5, 8), torch.zeros(3, dtype=torch.int64)),
     "must match"),
    (lambda: (torch.zeros(2, 3, 4, 8), torch.ones(8), torch.zeros(2, dtype=torch.int64)),
     "must be 4-D"),
    (lambda: (torch.zeros(2, 3, 4), torch.ones(2, 1, 4, 8), torch.zeros(2, dtype=torch.int64)),
     "must be 4-D"),
], ids=["shapes", "states-rank", "cache-rank"])
def test_fake_kernels_check_like_the_real_ops(bad, match):
    """Traced calls (FakeTensorMode, what torch.compile runs) fail as eager calls do."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode() as mode:
        cache, states, positions = (mode.from_tensor(t) for t in bad())
        for call in (lambda: append(cache, states), lambda: append_(cache, states, positions)):
            with pytest.raises(ValueError, match=match):
                call()


@pytest.mark.parametrize("shape", [(0, 3, 4, 8), (2, 3, 0, 8), (2, 3, 4, 0)])
def test_functional_append_of_empty_tokens_is_refused(shape):
    """A virtual cache needs B, H and D of at least 1: a clear error, not the driver's."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    cache = torch.zeros(shape)
    states = torch.zeros(shape[0], 1, *shape[2:])
    for call in (append, reserve_one):
        with pytest.raises(ValueError, match="B, H and D of at least 1"):
            call(cache, states)
    with FakeTensorMode() as mode:
        with pytest.raises(ValueError, match="B, H and D of at least 1"):
            append(mode.from_tensor(cache), mode.from_tensor(states))


def test_resize_backing_never_unmaps_under_the_live_views(device):
    """Shrinking below the live length would leave a held view over unmapped memory (a read
    faults the process): refused until truncate rolls the live length back."""
    cache = append(_empty(device), _tokens(device, steps=700))
    with pytest.raises(ValueError, match="at least the live length 700"):
        vtensor.resize_backing(cache, 1)
    with pytest.raises(ValueError, match="at least the live length 700"):
        vtensor.resize_backing(cache, [700, 699, 700])
    assert torch.equal(cache[:, :700], cache[:, :700].clone())  # still mapped, readable
    vtensor.resize_backing(cache, 700)
    short = vtensor.truncate(cache, 5)
    vtensor.resize_backing(short, 5)  # an explicit rollback, then the release
    assert vtensor.lookup(short).backed >= 5
    del cache, short


@pytest.mark.parametrize("lengths", [None, "ab", [1.7, 2.2, 3.0], True, [True, 4, 4], 2.0, [4, 4],
                                     -1])
def test_resize_backing_takes_token_counts_only(lengths):
    cache = _empty("cpu")
    with pytest.raises(ValueError, match="lengths must be an int or 3 ints"):
        vtensor.resize_backing(cache, lengths)
    del cache


@pytest.mark.parametrize("changes, error, match", [
    (dict(dtype="float32"), TypeError, "dtype must be a torch.dtype"),
    (dict(dtype=None), TypeError, "dtype must be a torch.dtype"),
    (dict(device="meta"), ValueError, "device must be cpu, cuda or npu"),
    (dict(chunk_bytes=2.5), ValueError, "chunk_bytes must be a positive int"),
    (dict(chunk_bytes=True), ValueError, "chunk_bytes must be a positive int"),
    (dict(capacity=(1 << 62) + (1 << 19)), ValueError, "bytes of address space"),
    (dict(batch=True), ValueError, "batch must be a positive int"),
    (dict(head_dim=0), ValueError, "head_dim must be a positive int"),
], ids=["dtype-str", "dtype-none", "meta", "chunk-float", "chunk-bool", "capacity-huge",
        "batch-bool", "head-dim-0"])
def test_empty_argument_errors(changes, error, match):
    """Each bad argument is named before any driver call (a huge capacity once wrapped around
    in the mmap size and reserved 2 MiB)."""
    args = dict(batch=2, heads=2, head_dim=4, capacity=64, dtype=torch.float32, device="cpu")
    args.update(changes)
    before = vtensor.memory_stats("cpu")["reserved_bytes"]
    with pytest.raises(error, match=match):
        vtensor.empty(args.pop("batch"), args.pop("heads"), args.pop("head_dim"), **args)
    assert vtensor.memory_stats("cpu")["reserved_bytes"] == before


def test_helpers_name_a_non_tensor_cache():
    for helper in (vtensor.capacity_view, vtensor.check, lambda c: vtensor.truncate(c, 0),
                   lambda c: vtensor.resize_backing(c, 0)):
        with pytest.raises(TypeError, match="cache must be a tensor, got NoneType"):
            helper(None)


@pytest.mark.skipif(torch.cuda.is_available(), reason="a machine without CUDA")
def test_empty_on_an_absent_device_is_named():
    with pytest.raises(ValueError, match="no cuda device is available"):
        vtensor.empty(2, 2, 4, capacity=64, dtype=torch.float32, device="cuda")


def test_append_spanning_2_gib_equals_cat(device):
    """Sequences whose regions reach 2^31 bytes take index_copy_ (VirtualCache.batch_index):
    the same values as torch.cat."""
    capacity = (1 << 30) // 128  # 128 bytes a token: regions of 1 GiB, three reach 3 GiB
    cache = _empty(device, batch=3, capacity=capacity)
    assert vtensor.lookup(cache).batch_index is not None
    reference = cache.clone()
    for steps in (1, 5, 700, 1):
        states = _tokens(device, steps=steps)
        cache = append(cache, states)
        reference = torch.cat([reference, states], 1)
        assert torch.equal(cache, reference)
    chunk = _chunk(device)
    below = (1 << 31) // 3 // chunk * chunk  # the largest region three of which stay below 2^31
    narrow = _empty(device, batch=3, capacity=below // 128)  # copy_
    assert 3 * vtensor.lookup(narrow).reservation.region_bytes < 1 << 31
    assert vtensor.lookup(narrow).batch_index is None
    del cache, narrow


@pytest.mark.parametrize("layout", LAYOUTS)
def test_functional_append_never_reads_unmapped_memory(device, layout):
    """Views that reach past the mapped tokens (a capacity view; a longer view kept from before
    resize_backing released its tail) are refused, not copied (the copy would read unmapped
    memory, a fault that ends the process); slices and dtype views within them are copied."""
    # more than two chunks of tokens in either layout, a quarter of the capacity (a CUDA chunk,
    # 2 MiB, is 32 of the CPU's)
    steps = 2 * _chunk(device) // 128 + 1  # 128 bytes a token of one sequence
    cache = append(_empty(device, layout, capacity=4 * steps), _tokens(device, steps=steps))
    with pytest.raises(ValueError, match="reads past the memory mapped"):
        append(vtensor.capacity_view(cache), _tokens(device))
    short = vtensor.truncate(cache, 2)
    vtensor.resize_backing(short, 2)
    assert vtensor.lookup(short).backed < steps
    with pytest.raises(ValueError, match="reads past the memory mapped"):
        append(cache, _tokens(device))
    del cache  # (past the backing now: not even a failure report may print it)
    for view in (short[:, 1:], short[1:], short[:, :, :1], short[:, :, :, 3:]):
        states = _tokens(device, batch=view.shape[0], heads=view.shape[2],
                         head_dim=view.shape[3])
        assert torch.equal(append(view, states), torch.cat([view, states], 1))
    raw = short.view(torch.int32)
    states = torch.zeros(3, 1, 2, 16, dtype=torch.int32, device=device)
    assert torch.equal(append(raw, states), torch.cat([raw, states], 1))
    grown = append(short, _tokens(device))  # the rolled-back view itself
    assert grown.shape[1] == 3
    del short, grown, raw
