"""How a timed CUDA graph's calls change a call's µs (session 21): one call per replay (the
replay's own launch charged to it), the same input set repeated in one replay, and four input
sets taking turns in one replay (consecutive calls read different caches, as a model's layers do).

    PYTHONPATH=$PWD:$PWD/scripts python3 docs/probes/repeat_probe.py [CASE ...]"""
import sys

import ab_trees
import bench_indexer as b


def main():
    fn = lambda a, k: b.OP(*a, **k)  # noqa: E731
    print(f"{'case':18s} {'one call':>10s} {'same set':>10s} {'4 sets':>10s}")
    for case in sys.argv[1:] or ["B64-64K-n1", "B64-64K-n1-fp8"]:
        batch, ctx, next_n, dtype = ab_trees.parse_case(case)
        sets = [(a, b.with_metadata(a, k, next_n))
                for a, k in (b.make_case(batch, ctx, next_n, dtype, seed=i) for i in range(4))]
        for _ in range(2):
            one = min(b.time_graph(fn, sets[:1], 20, min_replay_us=0) for _ in range(3))
            same = min(b.time_graph(fn, sets[:1], 20) for _ in range(3))
            four = min(b.time_graph(fn, sets, 20) for _ in range(3))
            print(f"{case:18s} {one:10.1f} {same:10.1f} {four:10.1f}", flush=True)
        del sets


if __name__ == "__main__":
    main()
