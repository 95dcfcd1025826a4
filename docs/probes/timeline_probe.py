"""Where a whole call's time goes: the benchmark's CUDA graph (one call per rotated input set)
replayed under the profiler, each call's kernels with their median start (from the call's first
kernel), duration and the gap before them; and the call's span, first kernel start to last end.

    PYTHONPATH=$PWD:$PWD/scripts python3 docs/probes/timeline_probe.py [CASE ...]

CASE as in ab_trees.py (B64-64K-n1 by default)."""
import statistics
import sys

import torch
from torch.profiler import profile, ProfilerActivity

import ab_trees
import bench_indexer as b


def timeline(case: str):
    batch, ctx, next_n, dtype = ab_trees.parse_case(case)

    def make(i):
        return b.make_case(batch, ctx, next_n, dtype, seed=i)
    first = make(0)
    case_bytes, _ = b.case_numbers(*first, batch, ctx, next_n, 1)
    sets = b.rotated_sets(make, first, case_bytes, next_n)
    fn = lambda a, k: b.OP(*a, **k)  # noqa: E731
    graph = b.warmed_graph(fn, sets)
    for _ in range(2):
        graph.replay()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(5):
            graph.replay()
        torch.cuda.synchronize()
    kernels = sorted((e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA),
                     key=lambda e: e.time_range.start)
    calls, cur = [], []
    for e in kernels:  # a call starts with its logits kernel
        if "logits" in e.name and cur:
            calls.append(cur)
            cur = []
        cur.append(e)
    calls.append(cur)
    calls = [c for c in calls if "logits" in c[0].name]
    n = min(len(c) for c in calls)
    print(f"{case}: {len(calls)} calls, {n} kernels each")
    spans = [c[-1].time_range.end - c[0].time_range.start for c in calls]
    for i in range(n):
        name = calls[0][i].name.replace("_indexer_", "").replace("_kernel", "")[:40]
        start = statistics.median(c[i].time_range.start - c[0].time_range.start for c in calls)
        dur = statistics.median(c[i].time_range.end - c[i].time_range.start for c in calls)
        gap = statistics.median(c[i].time_range.start - c[i - 1].time_range.end
                                for c in calls) if i else 0.0
        print(f"  {name:40s} start {start:7.1f}  gap {gap:5.1f}  µs {dur:7.1f}")
    print(f"  span median {statistics.median(spans):.1f} µs (min {min(spans):.1f})")
    # between calls: the next call's first kernel start minus this call's last end (within a
    # replay: the graph's calls are back to back), and every event that is not one of the calls'
    between = [calls[i + 1][0].time_range.start - calls[i][-1].time_range.end
               for i in range(len(calls) - 1)]
    print("  between calls: " + " ".join(f"{x:.1f}" for x in between))
    others = {e.name for c in calls for e in c[n:]}
    print(f"  other events: {sorted(others)[:6]}")
    print(f"  time_graph: {b.time_graph(fn, sets, 20):.1f} µs per call ({len(sets)} input sets)")


if __name__ == "__main__":
    for c in sys.argv[1:] or ["B64-64K-n1"]:
        timeline(c)
