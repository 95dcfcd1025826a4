"""The Gluon one-token logits kernel at B=64 64K next_n=1 (int8: one CTA per worker with work
sharing; fp8: two CTAs per worker) against the same kernel whose consumers score nothing, each
waiting for its tile's copy and releasing the stage at once (`docs/probes/dry_consumer.patch`,
int8; `dry_consumer_fp8.patch`), and one whose loaders copy nothing
(`docs/probes/no_copy_loader.patch`): the loads' time alone and the consumers' (session 34).
Logits kernel µs (profiler, mean of 5), HBM and L2-resident cache, trees taking turns:

    PYTHONPATH=$PWD:$PWD/scripts python3 docs/probes/dry_consumer_probe.py [--dtype fp8] [--next-n N] TREE...
"""
import argparse
import os
import subprocess
import sys

CODE = ("import bench_phase1_floor as f; print(f'{f._logits_us({n}, \"{d}\")[0]:.1f} "
        "{f._logits_us({n}, \"{d}\", pooled=True)[0]:.1f}')")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dtype", choices=("int8", "fp8"), default="int8")
    ap.add_argument("--next-n", type=int, default=1, help="query tokens per sequence")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("trees", nargs="+")
    opts = ap.parse_args()
    trees = opts.trees
    code = CODE.replace("{d}", opts.dtype).replace("{n}", str(opts.next_n))
    tag = f"{opts.dtype} n{opts.next_n} tree"
    print(f"{tag:<24} {'round':>5} {'HBM us':>8} {'L2 us':>8}")
    for rnd in range(opts.rounds):
        for tree in trees:
            root = os.path.abspath(tree)
            env = {**os.environ, "PYTHONPATH": f"{root}:{root}/scripts"}
            out = subprocess.run([sys.executable, "-c", code], env=env, cwd=root,
                                 capture_output=True, text=True)
            line = out.stdout.strip().splitlines()[-1] if out.returncode == 0 else \
                "failed: " + out.stderr.strip().splitlines()[-1]
            hbm, l2 = (line.split() + ["", ""])[:2]
            print(f"{tree:<24} {rnd:>5} {hbm:>8} {l2:>8}", flush=True)


if __name__ == "__main__":
    main()
