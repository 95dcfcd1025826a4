"""TopkConfig variants (session 20: rank blocks and steps, segment counts, threshold bits):
CUDA-graph µs of whole calls and the profiler's per-kernel times."""
import dataclasses, sys
import torch
import bench_indexer as b
import ab_trees
from custom_ops.backends.cuda import configs, plans
from torch.profiler import profile, ProfilerActivity

base = configs.TOPK
variants = {
    "base": dict(),
    "G9": dict(programs=4 * 132),
    "G13": dict(programs=6 * 132),
    "bits16": dict(threshold_bits=16),
}
cases = ["B1-64K-n1", "B8-64K-n1", "B64-64K-n1", "B64-16K-n1"]
res = {v: {c: [] for c in cases} for v in variants}
prof_t = {}
for rnd in range(2):
    for name, kw in variants.items():
        configs.TOPK = dataclasses.replace(base, **kw)
        plans.clear()
        t = ab_trees.time_cases(cases)
        for c in cases:
            res[name][c].append(t[c])
        if rnd == 0:
            for c in ("B64-64K-n1",):
                batch, ctx, nn, dt = ab_trees.parse_case(c)
                args, kwargs = b.make_case(batch, ctx, nn, dt, seed=0)
                kw2 = b.with_metadata(args, kwargs, nn)
                b.OP(*args, **kw2); torch.cuda.synchronize()
                with profile(activities=[ProfilerActivity.CUDA]) as prof:
                    for _ in range(5):
                        b.OP(*args, **kw2)
                    torch.cuda.synchronize()
                d = {}
                for e in prof.key_averages():
                    if e.key.startswith("_indexer_"):
                        d[e.key.replace("_indexer_", "").replace("_kernel", "")] = e.device_time_total / max(e.count, 1)
                prof_t[(name, c)] = d
        print(f"round {rnd} {name} done", flush=True)
print(f"{'variant':14s}" + "".join(f"{c:>18s}" for c in cases))
for name in variants:
    print(f"{name:14s}" + "".join(f"{' / '.join(f'{x:.1f}' for x in res[name][c]):>18s}" for c in cases))
for (name, c), d in prof_t.items():
    print(f"  {name:14s} {c:12s} " + " ".join(f"{k} {v:.1f}" for k, v in sorted(d.items())))
