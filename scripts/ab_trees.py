"""Source trees of the package timed against each other in one device call.

Each tree's `custom_ops` runs in its own process (the tree first on PYTHONPATH; the harness,
this directory's `bench_indexer.py`, is the same for all); the trees take turns over `--rounds`
rounds, and each keeps its best round. A case is timed as `bench_indexer.py` times it:
CUDA-graph replays over rotated input copies, the best of three medians of 20 replays. One
aligned line per case: each tree's µs and its ratio to the first tree. Changes of a few
percent show only this way: two device calls, or two machines, differ by ±3 % on the same code
(NOTES, session 18).

    git archive main | (mkdir -p .probe/main && tar -x -C .probe/main)   # before the call
    python scripts/ab_trees.py . .probe/main [--cases B1-4K-n1,B64-64K-n1-fp8] [--rounds 2]

A case is B<batch>-<context>K-n<next_n>, optionally -int8 (the default) or -fp8: decode, block
64, k 2048, sparse_mode 3, as in the benchmark; T<tokens>-<context>K[-fp8] is its prefill case
(one TND sequence of that many query tokens, causal).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys

DEFAULT_CASES = "B1-4K-n1,B64-4K-n1,B1-16K-n1,B1-64K-n1,B8-16K-n2,B64-64K-n1"
CASE = re.compile(r"B(\d+)-(\d+)K-n(\d+)(?:-(int8|fp8))?")
PREFILL = re.compile(r"T(\d+)-(\d+)K(?:-(int8|fp8))?")


def parse_case(text: str) -> tuple[int, int, int, str, str]:
    """'B64-64K-n1-fp8' -> (64, 65536, 1, 'fp8', 'BSND'); 'T4096-32K' -> (1, 32768, 4096,
    'int8', 'TND')."""
    if m := CASE.fullmatch(text.strip()):
        (batch, ctx, next_n), dtype, layout = (int(g) for g in m.groups()[:3]), m.group(4), "BSND"
    elif m := PREFILL.fullmatch(text.strip()):
        (next_n, ctx), batch, dtype, layout = (int(g) for g in m.groups()[:2]), 1, m.group(3), "TND"
    else:
        raise ValueError(f"case {text!r}: expected B<batch>-<context>K-n<next_n>[-int8|-fp8] "
                         "or T<tokens>-<context>K[-int8|-fp8], e.g. B64-64K-n1-fp8")
    if min(batch, ctx, next_n) < 1:
        raise ValueError(f"case {text!r}: batch, context and next_n must be at least 1")
    return batch, ctx * 1024, next_n, dtype or "int8", layout


def time_cases(cases: list[str]) -> dict[str, float]:
    """µs per call of each case, with the package on this process's path (runs on the GPU)."""
    import torch
    import bench_indexer as b

    times = {}
    for text in cases:
        batch, ctx, next_n, dtype, layout = parse_case(text)

        def make(i, batch=batch, ctx=ctx, next_n=next_n, dtype=dtype, layout=layout):
            return b.make_case(batch, ctx, next_n, dtype, layout=layout, seed=i)
        first = make(0)
        case_bytes, _ = b.case_numbers(*first, batch, ctx, next_n, 1)
        sets = b.rotated_sets(make, first, case_bytes, next_n)
        times[text] = min(b.time_graph(lambda a, k: b.OP(*a, **k), sets, 20) for _ in range(3))
        del sets
        torch.cuda.empty_cache()
    return times


def report(trees: list[str], cases: list[str], best: dict[str, dict[str, float]]) -> list[str]:
    """One aligned line per case: each tree's µs and its ratio to the first tree's."""
    width = max(len(c) for c in cases)
    lines = [f"{'case':<{width}}  " + "  ".join(f"{t[-22:]:>22}" for t in trees)]
    for case in cases:
        first = best[trees[0]][case]
        cells = [f"{best[t][case]:8.1f} us x{best[t][case] / first:6.3f}".rjust(22) for t in trees]
        lines.append(f"{case:<{width}}  " + "  ".join(cells))
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trees", nargs="+", help="source trees, each holding custom_ops/")
    ap.add_argument("--cases", default=DEFAULT_CASES, help="comma-separated, e.g. B64-64K-n1-fp8")
    ap.add_argument("--rounds", type=int, default=2, help="turns each tree takes")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    opts = ap.parse_args()
    cases = [c.strip() for c in opts.cases.split(",") if c.strip()]
    for case in cases:  # a bad case fails here, before any tree runs
        try:
            parse_case(case)
        except ValueError as e:
            ap.error(str(e))
    if opts.worker:
        print(json.dumps(time_cases(cases)))
        return
    trees = [os.path.abspath(t) for t in opts.trees]
    for tree in trees:
        if not os.path.isdir(os.path.join(tree, "custom_ops")):
            ap.error(f"tree {tree!r}: no custom_ops/ in it")
    if opts.rounds < 1:
        ap.error(f"--rounds {opts.rounds}: must be at least 1")
    best: dict[str, dict[str, float]] = {t: {} for t in trees}
    for r in range(opts.rounds):
        for tree in trees:
            env = dict(os.environ, PYTHONPATH=tree)
            out = subprocess.run([sys.executable, os.path.abspath(__file__), tree, "--worker",
                                  "--cases", ",".join(cases)], cwd=tree, env=env, check=True,
                                 stdout=subprocess.PIPE, text=True).stdout
            for case, us in json.loads(out.strip().splitlines()[-1]).items():
                best[tree][case] = min(us, best[tree].get(case, float("inf")))
            print(f"round {r + 1}: {tree} done", file=sys.stderr, flush=True)
    print("\n".join(report(trees, cases, best)))


if __name__ == "__main__":
    main()
