"""Probe (session 23): the bucket order's segment scan as the Gluon kernel against the Triton one.

For calls the Gluon kernel serves (bucket order, phase 2 launched without PDL: 33..128 rows),
both kernels must give the same indices and values bit for bit (the slot's order differs, the
ranked output does not), the Gluon one no segment count past CAP (a quarter that fills sends
its row to the exact select), and one case must match the golden; then both are timed in CUDA
graphs, taking turns.

    git apply docs/probes/gluon_segments.patch   # the kernel (not applied: it measured slower)
    PYTHONPATH=$PWD:$PWD/scripts python3 docs/probes/gluon_segments_probe.py
"""
from __future__ import annotations

import dataclasses

import torch

from bench_indexer import OP, make_case, time_graph, with_metadata
from custom_ops.backends.cuda import configs, indexer as cuda_indexer, plans
from custom_ops.testing import assert_indexer_close, tie_keys

CASES = [(64, 65536, 1, "int8"), (64, 65536, 1, "fp8"), (64, 16384, 1, "int8"),
         (32, 65536, 2, "int8"), (64, 4096, 2, "int8"), (48, 16384, 1, "fp8"),
         (64, 131072, 1, "int8")]
TIMED = [(64, 65536, 1, "int8"), (64, 65536, 1, "fp8"), (64, 16384, 1, "int8"),
         (64, 4096, 2, "int8"), (32, 65536, 2, "int8")]


def gluon(on: bool):
    configs.TOPK = dataclasses.replace(configs.TOPK, gluon_segments=on)


def run(args, kw):
    counts = []
    real = cuda_indexer.launch

    def spy(kernel, grid, *a, **k):
        if kernel is cuda_indexer._indexer_segments_gluon_kernel:
            counts.append(a[4])  # candidate counts [rows, G]
        return real(kernel, grid, *a, **k)
    cuda_indexer.launch = spy
    try:
        idx, val = OP(*args, **kw)
        torch.cuda.synchronize()
    finally:
        cuda_indexer.launch = real
    return idx, val, counts


def main():
    plans.enabled = False  # every call takes the full path, so the spy sees its launches
    base = configs.TOPK
    for batch, ctx, n, dtype in CASES:
        args, kw = make_case(batch, ctx, n, dtype)
        kw = dict(with_metadata(args, kw, n), return_value=True)
        variants = [("random", None), ("4 distinct", 4), ("zeros", 0)] if ctx == 16384 else \
            [("random", None)]
        for label, distinct in variants:
            if distinct is not None:
                tie_keys(args, distinct, seed=1)
            gluon(False)
            i0, v0, _ = run(args, kw)
            gluon(True)
            i1, v1, counts = run(args, kw)
            cap = configs.candidate_slots(kw["sparse_count"], configs.TOPK)
            over = max((int(c.max()) for c in counts), default=-1)
            same = torch.equal(i0, i1) and torch.equal(v0.view(torch.int32), v1.view(torch.int32))
            print(f"B{batch}-{ctx // 1024}K-n{n}-{dtype} {label:<10} gluon ran {bool(counts)}  "
                  f"bitwise equal {same}  largest segment count {over} (CAP {cap})", flush=True)
            if not same or not counts or over > cap:
                raise SystemExit("FAILED")
        del args, kw
    args, kw = make_case(64, 65536, 1, "int8", seed=3)
    kw = dict(with_metadata(args, kw, 1), return_value=True)
    gluon(True)
    idx, val, _ = run(args, kw)
    assert_indexer_close(idx, val, args, kw, golden_device="cuda")
    print("B64-64K-n1-int8 gluon: SPEC 1.5 comparison with the golden ok", flush=True)
    del args, kw
    torch.cuda.empty_cache()
    for batch, ctx, n, dtype in TIMED:
        sets = [make_case(batch, ctx, n, dtype, seed=s) for s in range(1 if ctx >= 65536 else 3)]
        sets = [(a, with_metadata(a, k, n)) for a, k in sets]
        times = {False: [], True: []}
        for _ in range(3):
            for on in (False, True):
                gluon(on)
                times[on].append(time_graph(lambda a, k: OP(*a, **k), sets, 10))
        print(f"B{batch}-{ctx // 1024}K-n{n}-{dtype}  triton {min(times[False]):7.1f}-"
              f"{max(times[False]):7.1f} us   gluon {min(times[True]):7.1f}-{max(times[True]):7.1f}"
              " us", flush=True)
        del sets
        torch.cuda.empty_cache()
    configs.TOPK = base


if __name__ == "__main__":
    main()
