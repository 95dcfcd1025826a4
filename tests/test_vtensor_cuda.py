"""Virtual-memory KV append on CUDA only: the driver, CUDA-graph replay, leaks, stream order, soak.

The device-generic cases (values, no copies, stale views, rollback, exhaustion, opcheck, compile)
run on CUDA from test_vtensor.py; these need the CUDA driver itself.
"""
import gc
import os

import pytest
import torch

from custom_ops import vtensor

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")

append = torch.ops.custom.vtensor_append
append_ = torch.ops.custom.vtensor_append_
HEADS, HEAD_DIM = 8, 128  # a Llama KV head: 2 KiB per token in bf16
LAYOUT = "per_sequence"  # the chunk arithmetic below counts one chunk per sequence


@pytest.fixture
def device():
    # the last device, so that a multi-GPU machine checks a non-zero index
    device = torch.device("cuda", torch.cuda.device_count() - 1)
    with torch.cuda.device(device):
        yield device
    gc.collect()
    vtensor.synchronize()
    assert vtensor.memory_stats(device)["physical_bytes"] == 0, "a test leaked memory"


def _driver(device):
    return vtensor.device_memory(device).driver


def _states(device, batch, steps=1):
    return torch.randn(batch, steps, HEADS, HEAD_DIM, device=device, dtype=torch.bfloat16)


def test_granularity_comes_from_the_driver(device):
    granularity = _driver(device).granularity
    assert granularity >= 4096 and granularity & (granularity - 1) == 0
    print(f"granularity on {device}: {granularity} bytes")


def test_cuda_graph_replay_builds_the_cache(device):
    batch, capacity, steps = 4, 4096, 300
    full = vtensor.capacity_view(vtensor.empty(batch, HEADS, HEAD_DIM, capacity=capacity,
                                               dtype=torch.bfloat16, device=device,
                                               layout=LAYOUT))
    start = torch.tensor([0, 7, 1000, 2047], device=device)
    positions = start.clone()
    states = _states(device, batch)
    vtensor.resize_backing(full, [int(p) + 1 for p in positions.tolist()])
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):  # warm up (Triton compiles) outside the capture
        append_(full, states, positions)
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        append_(full, states, positions)
        positions.add_(1)
    reference = torch.zeros(batch, capacity, HEADS, HEAD_DIM, device=device, dtype=torch.bfloat16)
    positions.copy_(start)
    for step in range(steps):
        vtensor.resize_backing(full, [int(p) + step + 1 for p in start.tolist()])
        states.copy_(_states(device, batch))
        for b, p in enumerate(start.tolist()):
            reference[b, p + step] = states[b, 0]
        graph.replay()
    torch.cuda.synchronize()
    for b, p in enumerate(start.tolist()):
        assert torch.equal(full[b, p:p + steps], reference[b, p:p + steps]), f"sequence {b}"
    vtensor.check(full)
    del graph


def _exhaust_both(device):
    cache = vtensor.empty(2, HEADS, HEAD_DIM, capacity=2048, dtype=torch.bfloat16, device=device,
                          layout=LAYOUT)
    cache = append(cache, _states(device, 2, 2000))
    with pytest.raises(vtensor.ReservationExhaustedError, match="2049 tokens needed"):
        append(cache, _states(device, 2, 49))
    # no new chunk may be created; the pooled ones cover fewer than the 4 a new cache needs
    vtensor.set_memory_budget(vtensor.memory_stats(device)["mapped_bytes"], device)
    try:
        with pytest.raises(vtensor.VTensorOutOfMemoryError, match="budget of .* exhausted"):
            append(vtensor.empty(4, HEADS, HEAD_DIM, capacity=64, dtype=torch.bfloat16,
                                 device=device, layout=LAYOUT), _states(device, 4, 1))
    finally:
        vtensor.set_memory_budget(None, device)
    grown = append(cache, _states(device, 2, 48))
    assert grown.shape[1] == 2048


def _settled_free_bytes(device):
    gc.collect()
    vtensor.synchronize(device)
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    return _driver(device).memory_info()[0]


def test_reservation_and_budget_exhaustion_leak_nothing(device):
    _exhaust_both(device)  # first run loads kernels and library state, which stay resident
    free_before = _settled_free_bytes(device)
    _exhaust_both(device)
    free_after = _settled_free_bytes(device)
    stats = vtensor.memory_stats(device)
    assert stats["reserved_bytes"] == stats["mapped_bytes"] == stats["pooled_bytes"] == 0
    if os.environ.get("PYTEST_XDIST_WORKER"):
        pytest.skip("cuMemGetInfo is device-wide and parallel test workers allocate on the same "
                    "GPU; run this test alone for the driver-level check")
    # cuMemGetInfo counts in 2 MiB pages; allow one for the driver's own bookkeeping
    assert free_after >= free_before - (2 << 20), \
        f"device memory did not come back: {free_before - free_after} bytes missing"


def test_real_device_out_of_memory_is_clear(device):
    free, _ = _driver(device).memory_info()
    with pytest.raises(vtensor.VTensorOutOfMemoryError, match="cuMemCreate"):
        _driver(device).create(((free * 2) // (2 << 20)) * (2 << 20))


def test_free_waits_for_the_stream_not_the_device(device):
    cache = append(vtensor.empty(4, HEADS, HEAD_DIM, capacity=4096, dtype=torch.bfloat16,
                                 device=device, layout=LAYOUT), _states(device, 4, 512))
    torch.cuda._sleep(2_000_000_000)  # keeps the stream busy for about a second
    total = cache.float().sum()
    del cache  # the last view: the storage and its reservation go now (no gc pass needed)
    assert vtensor.memory_stats(device)["mapped_bytes"] > 0, "unmapped while a kernel may read it"
    torch.cuda.synchronize()
    assert vtensor.memory_stats(device)["mapped_bytes"] == 0
    assert torch.isfinite(total)


def test_ten_thousand_step_soak_grows_chunk_by_chunk(device):
    batch, steps = 4, 10_000
    chunk = vtensor.DEFAULTS["chunk_bytes"]
    cache = vtensor.empty(batch, HEADS, HEAD_DIM, capacity=steps, dtype=torch.bfloat16,
                          device=device, layout=LAYOUT)
    reference = torch.empty(batch, steps, HEADS, HEAD_DIM, device=device, dtype=torch.bfloat16)
    mapped = [vtensor.memory_stats(device)["mapped_bytes"]]
    pointer = None  # an empty view has no data pointer: take the first append's
    row = HEADS * HEAD_DIM * 2
    for step in range(steps):
        states = _states(device, batch)
        reference[:, step] = states[:, 0]
        cache = append(cache, states)
        pointer = pointer or cache.data_ptr()
        assert cache.data_ptr() == pointer, f"step {step}: the cache moved"
        now = vtensor.memory_stats(device)["mapped_bytes"]
        grew = now - mapped[-1]
        assert grew % chunk == 0 and 0 <= grew <= batch * chunk, f"step {step}: grew by {grew}"
        # on demand at the first token of a chunk, or ahead once the last one is full
        assert grew == 0 or step * row % chunk == 0 or (step + 1) * row % chunk == 0, \
            f"step {step} grew inside a chunk"
        assert now <= batch * ((step + 1) * row + chunk), f"step {step}: {now} bytes mapped"
        mapped.append(now)
    assert torch.equal(cache, reference)
    assert mapped[-1] <= batch * (-(-steps * row // chunk) + 1) * chunk
