"""The threshold kernel's records (n, t0, bucket base, scale) for 24 rows (per-warp and whole-sample
bisections, short rows, ties, one repeated score) under the Triton interpreter, saved to argv[1]:
run it in two trees and compare the files to check that a change leaves t0 bit-identical
(session 22: docs/probes/threshold_one_reduction.patch against fe1a60f, identical).

    PYTHONPATH=/tmp/tri:scripts:. python docs/probes/threshold_records_interp.py /tmp/new.pt"""
import os, sys
os.environ["TRITON_INTERPRET"] = "1"
import torch
from custom_ops.backends.cuda import configs
from custom_ops.backends.cuda.indexer_topk import _indexer_threshold_kernel
torch.manual_seed(0)
width, k = 16384, 512
rows = 24
ns = configs.threshold_samples(width, configs.TOPK)
cap = configs.candidate_slots(k)
stride = width + configs.sample_columns(width)
logits = torch.zeros(rows, stride)
lens = torch.tensor([width, width - 100, 9000, 8000, 600, 300, 512, 1, 0] + [width] * 15, dtype=torch.int32)
for r in range(rows):
    x = torch.randn(width) * (r + 1) * 0.3 - (2.0 if r % 3 == 0 else 0.0)
    if r % 5 == 4:
        x = x.round()
    if r == 20:
        x[:] = 1.5
    logits[r, :width] = x
    logits[r, width:width + width // 8] = x[0::8]
meta = torch.zeros(1024, dtype=torch.int32)
err = torch.zeros(1, dtype=torch.int32)
out = []
for nb in (0, 1024):
    thr = torch.zeros((rows, 4), dtype=torch.int32)
    bcnt = torch.zeros((rows, 2, max(nb, 1)), dtype=torch.int32)
    _indexer_threshold_kernel[(rows,)](
        logits, stride, thr, bcnt if nb else thr, lens, lens, meta, err, rows, 1, rows, width, k,
        configs.target_candidates(k, cap), 1, CAUSAL=True, TND=False, HAS_ASQ=False,
        LEADING_ZERO=False, NS=ns, BITS=20, STEP=1, WARPS=8, NB=nb, BLOCK_B=32, PDL=False,
        num_warps=8)
    out.append(thr)
torch.save(out, sys.argv[1])
print("rows", rows, "t0", out[1][:, 1].tolist()[:6])
