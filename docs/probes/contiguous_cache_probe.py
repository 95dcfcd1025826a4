"""Whole indexer calls (CUDA graphs, as bench_indexer.py times them) on the benchmark's strided
cache view against a contiguous copy of it, B=64 64K next_n=1, alternating twice (session 34).

    PYTHONPATH=$PWD:$PWD/scripts python3 docs/probes/contiguous_cache_probe.py
"""
import torch

import bench_indexer as bi


def make(dtype, contiguous):
    def build(i):
        a, kw = bi.make_case(64, 65536, 1, dtype, seed=i)
        if contiguous:
            a = (a[0], a[1].contiguous(), a[2], a[3], a[4].contiguous())
        return a, kw
    return build


def main():
    bw = bi.copy_bandwidth()
    print(f"copy bandwidth {bw / 1e12:.3f} TB/s")
    for dtype in ("int8", "fp8"):
        for rnd in range(2):
            for contiguous in (False, True):
                build = make(dtype, contiguous)
                first = build(0)
                nbytes, _ = bi.case_numbers(*first, 64, 65536, 1, 64 * 65536)
                sets = bi.rotated_sets(build, first, nbytes, 1)
                us = bi.time_graph(lambda a, k: bi.OP(*a, **k), sets)
                tag = f"B64-64K-n1-{dtype} {'contiguous' if contiguous else 'strided'} r{rnd}"
                print(f"{tag:<34} {us:8.1f} us  {nbytes / us * 1e-6 / (bw / 1e12) * 100:5.1f}% bw",
                      flush=True)
                del sets, first
                torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
