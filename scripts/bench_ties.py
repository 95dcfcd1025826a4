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

CASES = [(64, "all"), (64, 64), (64, 4), (64, 1), (64, "zeros"),
         (1, "all"), (1, 64), (1, 4), (1, 1), (1, "zeros")]
CTX = 65536


def tie_keys(args, distinct, seed=1):
    """The cache (a strided view) rewritten in place: `distinct` key vectors drawn at random for
    every slot (with their scales), or 97 % of the keys zero ("zeros"), or untouched ("all")."""
    if distinct == "all":
        return
    cache, kscale = args[1], args[4]
    n = cache.shape[0] * cache.shape[1]
    g = torch.Generator(device="cuda").manual_seed(seed)
    flat = cache.reshape(n, -1).clone()
    if distinct == "zeros":
        flat[torch.rand(n, generator=g, device="cuda") < 0.97] = 0
    else:
        pick = torch.randint(0, distinct, (n,), generator=g, device="cuda")
        flat = flat[pick]
        kscale.copy_(kscale.reshape(n)[pick].reshape(kscale.shape))
    cache.copy_(flat.reshape(cache.shape))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="", help="only cases whose tag contains this text")
    opts = ap.parse_args()
    untied = {}
    for batch, distinct in CASES:
        tag = f"ties-B{batch}-ctx{CTX // 1024}K-n1-int8-{distinct}"
        if opts.only not in tag:
            continue
        args, kwargs = bench.make_case(batch, CTX, 1, "int8")
        tie_keys(args, distinct)
        sets = [(args, bench.with_metadata(args, kwargs, 1))]
        ours = bench.time_graph(lambda a, k: bench.OP(*a, **k), sets, 20)
        native = bench.time_graph(lambda a, k: bench.native_indexer(*a, **k), [(args, kwargs)], 5)
        if distinct == "all":
            untied[batch] = ours
        base = untied.get(batch, float("nan"))
        print(f"{tag:<34} {ours:9.1f} us  x{ours / base:6.2f} the untied call  "
              f"native {native:9.1f} us  x{native / ours:6.2f}", flush=True)
        del args, kwargs, sets
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
