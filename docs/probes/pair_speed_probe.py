"""Which pairs of the Gluon logits kernel (no work sharing) run fast: per pair its SM (%smid),
CTA (program id), consumer SUB, start, end and key tiles scored, 20 eager calls; prints the
pace (ns per tile) grouped by SUB, by the CTA's program id below or above the SM count (the
first or second CTA the launch puts on an SM, if it places them in order), by the order in
which an SM's CTAs started, and how stable an SM's or a CTA's pace is between calls. Run in a
tree with docs/probes/pair_speed.patch applied:

    mkdir -p .probe/ps && git archive HEAD | tar -x -C .probe/ps
    (cd .probe/ps && patch -p1 < ../../docs/probes/pair_speed.patch)
    cd .probe/ps && PYTHONPATH=$PWD python3 ../../docs/probes/pair_speed_probe.py 64 65536 fp8
"""
import sys

import numpy as np
import torch
from pair_probe_calls import probe_calls

batch, ctx, dt = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
qk = torch.float8_e4m3fn if dt == "fp8" else torch.int8
sms = torch.cuda.get_device_properties(0).multi_processor_count
calls = probe_calls(batch, ctx, qk)


def pace(p):
    """ns per tile of each pair that scored tiles (start to end)."""
    return (p[:, 2] - p[:, 0]) / np.maximum(p[:, 3], 1)


print(f"B{batch} {ctx} keys {dt}: ns per key tile, median over pairs, per call (first 5 calls)")
paces = []
for p in calls:
    me = np.arange(len(p))
    live = (p[:, 0] > 0) & (p[:, 2] > 0) & (p[:, 3] > 0)
    pc, pid, sub, sm = pace(p), me // 2, me % 2, p[:, 1]
    first = np.zeros(len(p), bool)  # the pair's CTA started first on its SM
    for s in np.unique(sm[live]):
        on = live & (sm == s)
        starts = {c: p[on & (pid == c), 0].min() for c in np.unique(pid[on])}
        first[on & (pid == min(starts, key=starts.get))] = True
    groups = {"SUB 0": live & (sub == 0), "SUB 1": live & (sub == 1),
              "pid < SMs": live & (pid < sms), "pid >= SMs": live & (pid >= sms),
              "first on SM": live & first, "second on SM": live & ~first}
    paces.append((pc, live, sm, pid))
    if len(paces) <= 5:
        t0 = p[live, 0].min()
        print("  " + "  ".join(f"{k} {np.median(pc[m]):6.0f} ({m.sum()})" for k, m in groups.items())
              + f"  ends (us) mean {(p[live, 2] - t0).mean() / 1e3:.1f} last {(p[live, 2] - t0).max() / 1e3:.1f}"
              + "  first/second on SM mean end " + " / ".join(
                  f"{(p[live & f, 2] - t0).mean() / 1e3:.1f}" for f in (first, ~first)))
# stability: does an SM (or a CTA) keep its pace from call to call?
pcs = np.array([np.where(l, pc, np.nan) for pc, l, _, _ in paces])
a, b = pcs[0::2].reshape(-1), pcs[1::2].reshape(-1)
ok = ~np.isnan(a) & ~np.isnan(b)
print(f"pair pace, call 2i against call 2i+1: correlation {np.corrcoef(a[ok], b[ok])[0, 1]:.2f}")
for name, key in (("SM", 2), ("CTA", 3)):
    per = []
    for pc, live, sm, pid in paces:
        ids = sm if key == 2 else pid
        per.append({int(i): np.nanmean(np.where(live & (ids == i), pc, np.nan))
                    for i in np.unique(ids[live])})
    common = sorted(set.intersection(*(set(d) for d in per)))
    m = np.array([[d[i] for i in common] for d in per])
    print(f"{name} pace, call against the next: correlation "
          f"{np.nanmean([np.corrcoef(m[i], m[i + 1])[0, 1] for i in range(len(m) - 1)]):.2f}")
