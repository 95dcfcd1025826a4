"""Device fixtures: every indexer test runs on each backend present; absent ones skip, saying why."""
import os

import pytest
import torch
from hypothesis import settings

import custom_ops  # noqa: F401  (registers the ops)
from custom_ops.backends import npu


# CI explores a fixed set of examples, so a failure there reproduces; local runs keep exploring.
settings.register_profile("ci", derandomize=True)
if os.environ.get("CI"):
    settings.load_profile("ci")

DEVICES = [
    pytest.param("cpu", id="cpu"),
    pytest.param("cuda", id="cuda", marks=pytest.mark.skipif(
        not torch.cuda.is_available(), reason="needs an NVIDIA GPU (none on this machine)")),
    pytest.param("npu", id="npu", marks=pytest.mark.skipif(
        not npu.available(),
        reason="needs an Ascend NPU with torch_npu and the op package (none on this machine)")),
]


@pytest.fixture(autouse=True)
def _seeded():
    """Tests that draw from torch's global generator see the same values alone or in a suite."""
    torch.manual_seed(0)


@pytest.fixture(autouse=True)
def _no_plans_from_other_tests():
    """Every test starts without the CUDA backend's launch plans: a plan's key does not see a
    test's monkeypatched configuration functions, and some tests count launches."""
    from custom_ops.backends.cuda import plans
    plans.clear()


@pytest.fixture(params=DEVICES)
def device(request):
    return request.param
