"""TopkConfig variants measured side by side: CUDA-graph µs of whole calls (two rounds) and, in
the first round, the profiler's per-kernel times for a few cases.

    PYTHONPATH=$PWD:$PWD/scripts python3 docs/probes/topk_knobs_probe.py [threshold|phase2]

`threshold` (session 19): the threshold kernel's knobs (results are exact whatever t0 is);
`phase2` (session 20): segment counts and threshold bits beside the default;
`pdl` (session 21): phase 2's kernels as programmatic dependents at any row count; `rows`
(session 21): the same and the bucket order at 128 and 256 rows; `pdl-rows` (session 21):
that at 16 and 32 rows; `waves` (session 22): rank blocks of 64 slots on two warps (4608
one-warp programs at 64 rows exceed the 32 resident per SM; the session also measured the
threshold's per-warp bisection two bits a step and the place kernel capped to 64 registers, with
code since removed: NOTES).
ROUNDS=n alternates n rounds (2)."""
import dataclasses
import os
import sys

import torch
from torch.profiler import profile, ProfilerActivity

import ab_trees
import bench_indexer as b
from custom_ops.backends.cuda import configs, plans

SETS = {
    "threshold": dict(
        variants={"base": {}, "bits16": dict(threshold_bits=16), "bits12": dict(threshold_bits=12),
                  "whole-sample": dict(threshold_per_warp=False),
                  "warps4": dict(threshold_warps=4), "warps16": dict(threshold_warps=16),
                  "ns2048": dict(samples=2048, sample_stride=32), "pdl64": dict(pdl_max_rows=64)},
        cases=["B1-64K-n1", "B64-64K-n1", "B1-16K-n1"], profiled=["B1-64K-n1", "B64-64K-n1"]),
    "phase2": dict(
        variants={"base": {}, "G9": dict(programs=4 * 132), "G13": dict(programs=6 * 132),
                  "bits16": dict(threshold_bits=16)},
        cases=["B1-64K-n1", "B8-64K-n1", "B64-64K-n1", "B64-16K-n1"], profiled=["B64-64K-n1"]),
    "pdl": dict(
        variants={"base": dict(phase2_pdl_max_rows=0, bucket_max_rows=64),
                  "phase2-pdl": dict(phase2_pdl_max_rows=1 << 20)},
        cases=["B1-4K-n1", "B8-64K-n1", "B64-4K-n1", "B64-16K-n2", "B64-64K-n1",
               "B64-64K-n1-fp8", "B64-64K-n4"], profiled=[]),
    "rows": dict(
        variants={"base": dict(phase2_pdl_max_rows=0, bucket_max_rows=64),
                  "phase2-pdl": dict(phase2_pdl_max_rows=1 << 20),
                  "buckets256": dict(bucket_max_rows=256),
                  "buckets256-pdl": dict(bucket_max_rows=256, phase2_pdl_max_rows=1 << 20)},
        cases=["B64-64K-n4", "B32-64K-n4", "B64-64K-n2", "B64-16K-n2", "B64-16K-n4"],
        profiled=["B64-64K-n4"]),
    "pdl-rows": dict(
        variants={"base": {}, "phase2-pdl-32": dict(phase2_pdl_max_rows=32)},
        cases=["B8-64K-n2", "B8-16K-n4", "B8-64K-n4", "B16-64K-n1", "B32-64K-n1",
               "B32-16K-n1"], profiled=[]),
    "waves": dict(
        variants={"base": {}, "rank64": dict(bucket_block=64, rank_warps=2)},
        cases=["B1-64K-n1", "B8-64K-n1", "B64-4K-n1", "B64-16K-n1", "B64-64K-n1",
               "B64-64K-n2"], profiled=["B64-64K-n1"]),
}


def kernel_times(case: str) -> dict[str, float]:
    """Mean µs per call of each phase-2 (and logits) kernel over 5 eager calls."""
    batch, ctx, nn, dt = ab_trees.parse_case(case)
    args, kwargs = b.make_case(batch, ctx, nn, dt, seed=0)
    kw = b.with_metadata(args, kwargs, nn)
    b.OP(*args, **kw)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(5):
            b.OP(*args, **kw)
        torch.cuda.synchronize()
    return {e.key.replace("_indexer_", "").replace("_kernel", ""):
            e.device_time_total / max(e.count, 1)
            for e in prof.key_averages() if e.key.startswith("_indexer_")}


def main():
    spec = SETS[sys.argv[1] if len(sys.argv) > 1 else "phase2"]
    variants, cases = spec["variants"], spec["cases"]
    base = configs.TOPK
    res = {v: {c: [] for c in cases} for v in variants}
    prof_t = {}
    for rnd in range(int(os.environ.get("ROUNDS", 2))):
        for name, kw in variants.items():
            configs.TOPK = dataclasses.replace(base, **kw)
            plans.clear()
            t = ab_trees.time_cases(cases)
            for c in cases:
                res[name][c].append(t[c])
            if rnd == 0:
                for c in spec["profiled"]:
                    prof_t[(name, c)] = kernel_times(c)
            print(f"round {rnd} {name} done", flush=True)
    print(f"{'variant':14s}" + "".join(f"{c:>18s}" for c in cases))
    for name in variants:
        print(f"{name:14s}" + "".join(f"{' / '.join(f'{x:.1f}' for x in res[name][c]):>18s}"
                                      for c in cases))
    for (name, c), d in prof_t.items():
        print(f"  {name:14s} {c:12s} " + " ".join(f"{k} {v:.1f}" for k, v in sorted(d.items())))


if __name__ == "__main__":
    main()
