"""Per-pair start and end of the Gluon logits kernel's consumers without work sharing
(%globaltimer, 20 eager calls): how far apart the static split's pairs end. Run in a tree with
docs/probes/pair_ends.patch applied:

    mkdir -p .probe/pe && git archive HEAD | tar -x -C .probe/pe
    (cd .probe/pe && patch -p1 < ../../docs/probes/pair_ends.patch)
    cd .probe/pe && PYTHONPATH=$PWD python3 ../../docs/probes/pair_ends_probe.py 64 65536 fp8

The third argument: fp8, int8, or int8-static (int8 with work sharing turned off).
"""
import dataclasses
import sys

import numpy as np
import torch
from custom_ops.backends.cuda import configs
from pair_probe_calls import probe_calls

batch, ctx, dt = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
qk = torch.float8_e4m3fn if dt == "fp8" else torch.int8
if dt == "int8-static":
    lc = configs.LOGITS[("int8", "single")]
    configs.LOGITS[("int8", "single")] = dataclasses.replace(lc, gluon_steal_keys=0)
rows = []
for p in probe_calls(batch, ctx, qk):
    p = p[(p[:, 0] > 0) & (p[:, 2] > 0)]
    t0 = p[:, 0].min()
    st, end = (p[:, 0] - t0) / 1e3, (p[:, 2] - t0) / 1e3
    rows.append([end.max(), np.mean(end), np.percentile(end, 10), np.percentile(end, 50),
                 np.percentile(end, 90), st.max(), len(p)])
a = np.array(rows)
names = ["span", "end_mean", "end_p10", "end_p50", "end_p90", "start_max", "pairs"]
print(f"B{batch} {ctx} keys {dt}, 20 calls, µs from the first consumer start (median; min..max)")
for i, n in enumerate(names):
    print(f"  {n:<10} {np.median(a[:, i]):8.2f}   {a[:, i].min():8.2f} .. {a[:, i].max():8.2f}")
print("last call, ends sorted (every 32nd):", np.round(np.sort(end)[::32], 1).tolist())
