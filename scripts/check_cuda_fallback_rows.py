"""Rows of the benchmark's inputs whose sampled threshold missed [k, CAP], so that the top-k took
the exact fallback (one program's radix select over the whole row: ~340 µs at 64K keys on the
H200). One such row in a rotation set shows in the benchmark as an outlier, not as a wrong
result: session 13's per-warp threshold sent rows whose k-th score lies near zero there, and the
benchmark's B=8 64K case went from 45 to 156 µs unnoticed (NOTES, session 14).

Runs every decode case of `bench_indexer.py` (and the two prefills) with the same rotated seeds,
reads each row's candidate total from the segment counts, and prints one aligned line per case:
rows with more than k keys, rows below k candidates, rows above CAP. Exit status 1 if any row
missed. (The bucket order takes more than CAP candidates where its placed groups fit; the count
here is the sort order's rule, the stricter one.)

    PYTHONPATH=$PWD python scripts/check_cuda_fallback_rows.py [--only TEXT]
"""
from __future__ import annotations

import argparse
import sys

import torch

import bench_indexer as bench
from custom_ops.backends.cuda import configs, indexer as cuda_indexer
from custom_ops.backends.cuda.topk import _indexer_segments_kernel


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="", help="only cases whose tag contains this text")
    opts = ap.parse_args()
    segments = []  # (thr, counts) of every segment launch of the current call
    launch = cuda_indexer.launch

    def spy(kernel, grid, *args, **kwargs):
        if kernel is _indexer_segments_kernel:
            segments.append((args[2], args[4]))
        return launch(kernel, grid, *args, **kwargs)
    cuda_indexer.launch = spy
    cases = [("decode", b, c, n, d) for d in ("int8", "fp8") for b, c, n in bench.DECODE]
    cases += [("prefill", 1, c, bench.PREFILL_TOKENS, d) for c in bench.PREFILL_CONTEXTS
              for d in ("int8", "fp8")]
    missed_any = False
    for kind, batch, ctx, n, dtype in cases:
        tnd = kind == "prefill"
        tag = bench.case_tag(kind, batch, ctx, n, dtype)
        if opts.only not in tag:
            continue
        layout = "TND" if tnd else "BSND"
        args, kwargs = bench.make_case(batch, ctx, n, dtype, layout=layout)
        bytes_, _ = bench.case_numbers(args, kwargs, batch, ctx, n, 0)
        copies = bench.rotation_copies(bytes_)
        del args, kwargs
        rows = low = high = 0
        for seed in range(copies):  # the benchmark's rotation set
            args, kwargs = bench.make_case(batch, ctx, n, dtype, layout=layout, seed=seed)
            kwargs = bench.with_metadata(args, kwargs, batch * n if tnd else n)
            k = kwargs["sparse_count"]
            cap = configs.candidate_slots(k)
            segments.clear()
            bench.OP(*args, **kwargs)
            for thr, counts in segments:
                total = counts.sum(1)
                long_rows = thr[:, 0] > k
                rows += int(long_rows.sum())
                low += int((long_rows & (total < k)).sum())
                high += int((long_rows & (total > cap)).sum())
            del args, kwargs
        missed_any |= low + high > 0
        print(f"{tag:<34} {copies:3d} sets  {rows:7d} rows past k  {low:4d} below k  "
              f"{high:4d} above CAP{'  MISSED' if low + high else ''}", flush=True)
        torch.cuda.empty_cache()
    return 1 if missed_any else 0


if __name__ == "__main__":
    sys.exit(main())
