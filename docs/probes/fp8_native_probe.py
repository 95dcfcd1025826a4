"""Probe (session 23): fp8 dots on Hopper's native fp8 MMA against the exact fp16 upcast.

`LogitsConfig.fp8_as_f16=False` makes the Triton logits kernel dot the e4m3 tiles directly
(the Gluon kernel only takes the upcast, so every fp8 call then runs the Triton kernel). Per
case: µs of both in CUDA graphs (the benchmark's timing), and how far each lands from the
float64 golden: SPEC §1.5's comparison (pass or its first failure), the share of the golden
top-k returned, and the value error relative to the row's largest |score|.

    PYTHONPATH=$PWD:$PWD/scripts python3 docs/probes/fp8_native_probe.py
"""
from __future__ import annotations

import dataclasses

import torch

from bench_indexer import OP, make_case, time_graph, with_metadata
from custom_ops.backends.cuda import configs
from custom_ops.reference.indexer import golden_scores, topk_rows
from custom_ops.testing import assert_indexer_close

CASES = [(64, 65536, 1), (64, 65536, 4), (8, 65536, 1), (1, 65536, 1)]


def native(on: bool):
    for key, lc in list(configs.LOGITS.items()):
        if key[0] == "fp8":
            configs.LOGITS[key] = dataclasses.replace(lc, fp8_as_f16=not on)


def accuracy(args, kw):
    kw = dict(kw, return_value=True)
    idx, val = OP(*args, **kw)
    try:
        assert_indexer_close(idx, val, args, kw, golden_device="cuda")
        verdict = "SPEC 1.5 ok"
    except AssertionError as e:
        verdict = f"SPEC 1.5 FAILS: {str(e)[:90]}"
    k = kw["sparse_count"]
    idx, val = idx.reshape(-1, k).long(), val.reshape(-1, k).double()
    share, worst = [], 0.0
    for row0, score in golden_scores(*args, device="cuda", **kw):
        score = score.cuda()
        rows = slice(row0, row0 + score.shape[0])
        ref, _ = topk_rows(score, k)
        got = idx[rows]
        hit = (got[:, :, None] == ref.cuda().long()[:, None, :]).any(2) & (got >= 0)
        share.append(hit.sum().item() / max(1, (ref >= 0).sum().item()))
        gold = score.gather(1, got.clamp(min=0))
        scale = torch.where(score > float("-inf"), score.abs(), 0.0).amax(1, keepdim=True)
        err = torch.where(got >= 0, (val[rows] - gold).abs() / scale, 0.0)
        worst = max(worst, err.max().item())
    return verdict, sum(share) / len(share), worst


def main():
    base = dict(configs.LOGITS)
    for batch, ctx, n in CASES:
        sets = [make_case(batch, ctx, n, "fp8", seed=i) for i in range(1 if batch > 8 else 8)]
        sets = [(a, with_metadata(a, k, n)) for a, k in sets]
        for on in (False, True):
            native(on)
            us = time_graph(lambda a, k: OP(*a, **k), sets, 10)
            verdict, share, worst = accuracy(*sets[0])
            label = "native fp8 MMA" if on else "fp16 upcast   "
            print(f"B{batch}-{ctx // 1024}K-n{n}-fp8  {label} {us:8.1f} us  top-k share "
                  f"{share:.5f}  value err / row max {worst:.2e}  {verdict}", flush=True)
            configs.LOGITS.update(base)
        del sets
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
