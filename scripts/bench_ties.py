"""Rows of tied scores: the indexer on decode calls whose key cache holds few distinct key
vectors (scores of few values, ties in the thousands) or mostly zero keys (scores of exactly 0),
against the same call on the untouched cache and against the torch-native indexer, measured in
the same run (CUDA-graph medians, the benchmark's own timing).

A tie group at the k-th score larger than a row's candidate slots sends the row to the exact
fallback (NOTES.md, session 17: B=64 64K went from 188 to 934 µs with one distinct key vector).

    PYTHONPATH=$PWD python scripts/bench_ties.py [--only TEXT]
"""
from __future__ import annotations

import argparse

import torch

import bench_indexer as bench
from custom_ops.testing import tie_keys

# (batch, distinct key vectors: None the untouched cache, 0 97 % zero keys)
CASES = [(64, None), (64, 64), (64, 4), (64, 1), (64, 0),
         (1, None), (1, 64), (1, 4), (1, 1), (1, 0)]
CTX = 65536


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="", help="only cases whose tag contains this text")
    opts = ap.parse_args()
    untied = {}
    for batch, distinct in CASES:
        kind = {None: "untied", 0: "zeros"}.get(distinct, f"distinct{distinct}")
        tag = f"ties-B{batch}-ctx{CTX // 1024}K-n1-int8-{kind}"
        if opts.only not in tag:
            continue
        def make(i, batch=batch, distinct=distinct):
            a, k = bench.make_case(batch, CTX, 1, "int8", seed=i)
            if distinct is not None:
                tie_keys(a, distinct)
            return a, k
        args, kwargs = make(0)
        # input sets rotated as the benchmark rotates them (a B=1 cache of 8.5 MB replayed
        # alone stays in L2; until session 21 this script timed one set)
        case_bytes, _ = bench.case_numbers(args, kwargs, batch, CTX, 1, 1)
        sets = bench.rotated_sets(make, (args, kwargs), case_bytes, 1)
        ours = bench.time_graph(lambda a, k: bench.OP(*a, **k), sets, 20)
        native = bench.time_graph(lambda a, k: bench.native_indexer(*a, **k),
                                  bench.without_metadata(sets[:8]), 5)
        if distinct is None:
            untied[batch] = ours
        base = untied.get(batch, float("nan"))
        print(f"{tag:<34} {ours:9.1f} us  x{ours / base:6.2f} the untied call  "
              f"native {native:9.1f} us  x{native / ours:6.2f}", flush=True)
        del args, kwargs, sets
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
