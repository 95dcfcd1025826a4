"""`python -m custom_ops`: the operator doc's two examples on the best device present.

Runs the single-op example and the compiled QLINetwork on the NPU if torch_npu sees one, else on
CUDA, else on the CPU; compares each with the golden and prints rows matched and time.
"""
import sys
import time

import torch

import custom_ops  # noqa: F401
from custom_ops.examples import QLINetwork, network_call, seed_inputs, single_op
from custom_ops.testing import IndexerMismatch, assert_indexer_close


def best_device() -> str:
    try:
        import torch_npu  # noqa: F401
        if torch.npu.is_available():
            return "npu:0"
    except ImportError:
        pass
    return "cuda:0" if torch.cuda.is_available() else "cpu"


def _timed(fn):
    sync = getattr(torch, torch.device(DEVICE).type, None)
    fn()  # warm-up (compilation, first launches)
    if hasattr(sync, "synchronize"):
        sync.synchronize()
    t = time.perf_counter()
    out = fn()
    if hasattr(sync, "synchronize"):
        sync.synchronize()
    return out, (time.perf_counter() - t) * 1e3


def _report(name, out, args, kwargs, ms):
    rows = out.reshape(-1, out.shape[-1]).shape[0]
    try:
        assert_indexer_close(out, torch.empty(0), args, kwargs)
        verdict = f"{rows}/{rows} rows match the golden"
    except IndexerMismatch as e:
        verdict = f"MISMATCH: {e}"
    print(f"{name:<34} {ms:9.2f} ms   {verdict}")
    return verdict.startswith("MISMATCH")


DEVICE = best_device()


def main() -> int:
    print(f"custom_ops {custom_ops.__version__} on {DEVICE} (torch {torch.__version__})")
    failed = False
    args, kwargs = seed_inputs(DEVICE, sparse_mode=0, cmp_ratio=1)
    out, ms = _timed(lambda: single_op(DEVICE, args, kwargs)[0])
    failed |= _report("single op  B=24 S1=4 S2=512 mode0", out, args, kwargs, ms)

    args, kwargs = seed_inputs(DEVICE, sparse_mode=3, cmp_ratio=4)
    torch._dynamo.reset()
    model = torch.compile(QLINetwork(4, 512, DEVICE, cmp_ratio=4), fullgraph=True, dynamic=False)
    out, ms = _timed(lambda: network_call(model, args, kwargs))
    failed |= _report("compiled QLINetwork  mode3 cmp4", out, args, kwargs, ms)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
