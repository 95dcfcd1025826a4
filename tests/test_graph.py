"""Graph mode: the doc's QLINetwork under torch.compile equals eager (SPEC §0, issue 2 item 6)."""
import pytest
import torch
from torch._dynamo.testing import CompileCounterWithBackend

from custom_ops.examples import QLINetwork, network_call, seed_inputs
from custom_ops.testing import assert_indexer_close


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def test_compiled_network_equals_eager(device):
    args, kwargs = seed_inputs(device, sparse_mode=3, cmp_ratio=4)
    model = QLINetwork(4, 512, device, cmp_ratio=4)
    eager = network_call(model, args, kwargs)
    compiled = torch.compile(model, fullgraph=True, dynamic=False)
    out = network_call(compiled, args, kwargs)
    assert torch.equal(out, eager)
    assert_indexer_close(out, torch.empty(0), args, kwargs)


def test_dynamic_batch_recompiles_at_most_once(device):
    """Four batch sizes: a specialisation on B (e.g. an `int` schema argument receiving the
    symbolic batch size) would compile four times."""
    counter = CompileCounterWithBackend("inductor")
    model = QLINetwork(4, 512, device, cmp_ratio=4)
    compiled = torch.compile(model, fullgraph=True, dynamic=True, backend=counter)
    for b in (6, 9, 13, 17):
        args, kwargs = seed_inputs(device, b=b, sparse_mode=3, cmp_ratio=4, seed=b)
        assert torch.equal(network_call(compiled, args, kwargs), network_call(model, args, kwargs))
    assert counter.frame_count <= 2, f"{counter.frame_count} compiles for four batch sizes"
