"""Per unit row: when phase 1 (Gluon) finished its last segment, relative to the first consumer
start; next to the profiler's kernel times of the same call. Branch probe-rowend."""
import torch
import bench_indexer as b
from custom_ops.backends.cuda import indexer_logits_gluon as G, plans
from torch.profiler import profile, ProfilerActivity

plans.enabled = False
for batch, ctx, nn in [(64, 65536, 1), (64, 65536, 4), (64, 65536, 2), (8, 65536, 1), (64, 16384, 1)]:
    args, kwargs = b.make_case(batch, ctx, nn, "int8", seed=0)
    kw = b.with_metadata(args, kwargs, nn)
    probe = torch.zeros(1 + 4096, dtype=torch.int64, device="cuda")
    G.PROBE = probe
    b.OP(*args, **kw)
    torch.cuda.synchronize()
    ends_all = []
    for rep in range(5):
        probe.zero_(); probe[0] = 2**62
        torch.cuda.synchronize()
        if rep == 4:
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                b.OP(*args, **kw); torch.cuda.synchronize()
        else:
            b.OP(*args, **kw)
        torch.cuda.synchronize()
        p = probe.cpu()
        ends = p[1:][p[1:] > 0]
        rel = (ends - p[0]).double() / 1000
        ends_all.append(rel)
    rel = torch.cat(ends_all)
    q = torch.quantile(rel, torch.tensor([0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0], dtype=torch.float64))
    print(f"B{batch} ctx{ctx} n{nn}: unit rows {len(ends_all[0])}, row end µs after phase-1 start "
          "min/p10/p25/median/p75/p90/max " + " ".join(f"{v:.1f}" for v in q.tolist()))
    for r, e in enumerate(ends_all):
        print("   rep", r, "max", f"{e.max():.1f}", "rows done by max-10µs:",
              int((e <= e.max() - 10).sum()), "by max-5µs:", int((e <= e.max() - 5).sum()))
    evs = [e for e in prof.events() if e.device_type.name == "CUDA"]
    t0 = min(e.time_range.start for e in evs)
    for e in sorted(evs, key=lambda e: e.time_range.start):
        print(f"     {e.name[:40]:40s} start {e.time_range.start - t0:8.1f} end {e.time_range.end - t0:8.1f} dur {e.time_range.end - e.time_range.start:7.1f}")
    G.PROBE = None
