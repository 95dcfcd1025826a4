"""Per-pair timeline of the work-sharing Gluon logits kernel: each pair's consumer start and end,
its loader's end of its own share, and how many parts it took from others (%globaltimer, 20
eager calls). Run in a tree with docs/probes/steal_ends.patch applied:

    mkdir -p .probe/pr && git archive HEAD | tar -x -C .probe/pr
    (cd .probe/pr && patch -p1 < ../../docs/probes/steal_ends.patch)
    cd .probe/pr && PYTHONPATH=$PWD python3 ../../docs/probes/steal_ends_probe.py 64 65536 [fp8]
"""
import dataclasses
import sys
import numpy as np
import torch
from custom_ops.backends.cuda import configs
from pair_probe_calls import probe_calls

batch, ctx = int(sys.argv[1]), int(sys.argv[2])
qk = torch.float8_e4m3fn if sys.argv[3:] == ["fp8"] else torch.int8
if qk != torch.int8:  # fp8 shares work only where configs says so (off since session 26)
    lc = configs.LOGITS[("fp8", "single")]
    configs.LOGITS[("fp8", "single")] = dataclasses.replace(lc, gluon_steal_keys=1 << 21)
rows = []
for p in probe_calls(batch, ctx, qk):
    p = p[p[:, 0] > 0]
    t0 = p[:, 0].min()
    st, own, end, took = (p[:, 0] - t0) / 1e3, (p[:, 1] - t0) / 1e3, (p[:, 2] - t0) / 1e3, p[:, 3]
    rows.append([end.max(), np.mean(end), np.percentile(end, 10), np.percentile(end, 50),
                 np.percentile(end, 90), np.mean(own), np.percentile(own, 10), own.max(), st.max(),
                 took.sum(), (took > 0).sum(), len(p)])
a = np.array(rows)
names = ["span", "end_mean", "end_p10", "end_p50", "end_p90", "own_mean", "own_p10", "own_max",
         "start_max", "taken", "takers", "pairs"]
print(f"B{batch} {ctx} keys, 20 calls, µs from the first consumer start (median over calls; min..max)")
for i, n in enumerate(names):
    print(f"  {n:<10} {np.median(a[:, i]):8.2f}   {a[:, i].min():8.2f} .. {a[:, i].max():8.2f}")
# one call in detail: sorted ends
print("last call, ends sorted (every 16th):", np.round(np.sort(end)[::16], 1).tolist())
print("last call, own-done sorted (every 16th):", np.round(np.sort(own)[::16], 1).tolist())
