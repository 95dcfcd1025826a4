"""Phase 2's programs on a timeline: each program of the threshold, segment, place and rank
kernels stamps %globaltimer when it starts, at two points after its dependent loads, and when
it ends (and its SM), through `indexer_topk.PROBE_ADDR` (a compile-time address; 0 in the
library, so the stamps compile away). Apply docs/probes/phase2_timeline.patch first (made on
fe1a60f; session 22's output: docs/bench/phase2_timeline_h200.log).

    git apply docs/probes/phase2_timeline.patch
    PYTHONPATH=$PWD:$PWD/scripts python3 docs/probes/phase2_timeline_probe.py

Per kernel and case: quantiles (min/p10/median/p90/max, µs) of the programs' start relative to
the kernel's first start, of their time to each stamp, and of their end; the gap between one
kernel's last end and the next one's first start. (Eager calls, five of each case, the last
one's stamps printed; segments run at 64 registers with the stamps, 56 without.)"""
import torch
import triton.language as tl

import bench_indexer as b
from custom_ops.backends.cuda import indexer_topk, plans

KERNELS = ["threshold", "segments", "place", "rank"]
STAMPS = {"threshold": ["loads+sample+bisect", "t0", "-", "end"],
          "segments": ["t0 loaded", "scan done", "-", "end"],
          "place": ["counts loaded", "first atomic back", "-", "end"],
          "rank": ["total loaded", "-", "-", "end"]}
buf = torch.zeros(4 * 8192 * 6, dtype=torch.int64, device="cuda")
indexer_topk.PROBE_ADDR = tl.constexpr(buf.data_ptr())
plans.enabled = False


def q(x):
    if x.numel() == 0:
        return "-"
    v = torch.quantile(x.double(), torch.tensor([0.0, 0.1, 0.5, 0.9, 1.0], dtype=torch.float64))
    return "/".join(f"{t:.1f}" for t in v.tolist())


for batch, ctx, nn in [(64, 65536, 1), (8, 65536, 1), (1, 65536, 1), (64, 16384, 1)]:
    args, kwargs = b.make_case(batch, ctx, nn, "int8", seed=0)
    kw = b.with_metadata(args, kwargs, nn)
    for rep in range(5):
        buf.zero_()
        torch.cuda.synchronize()
        b.OP(*args, **kw)
        torch.cuda.synchronize()
    rec = buf.view(4, 8192, 6).cpu()
    print(f"B{batch} ctx{ctx} n{nn}")
    prev_end = None
    for k, name in enumerate(KERNELS):
        r = rec[k]
        live = r[:, 0] > 0
        r = r[live]
        if r.shape[0] == 0:
            continue
        t0 = r[:, 0].min()
        start = (r[:, 0] - t0).double() / 1000
        end = (r[:, 4] - t0).double() / 1000
        gap = "" if prev_end is None else f"  gap after previous {(t0 - prev_end) / 1000:.1f}"
        sms = r[:, 5].unique().numel()
        print(f"  {name:9s} programs {r.shape[0]:5d} on {sms} SMs{gap}")
        print(f"    start          {q(start)}")
        for j in (1, 2):
            if STAMPS[name][j - 1] != "-":
                at = r[:, j] > 0
                print(f"    {STAMPS[name][j - 1]:14s} {q(((r[at, j] - r[at, 0]).double() / 1000))}"
                      "  (after the program's start)")
        print(f"    duration       {q(end - start)}")
        print(f"    end            {q(end)}")
        prev_end = r[:, 4].max()
