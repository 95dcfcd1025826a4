"""The Gluon int8 one-token logits kernel (work sharing on, B=64 64K next_n=1) against the same
kernel whose consumers score nothing: each waits for its tile's copy and releases the stage at
once (`docs/probes/dry_consumer.patch`). The dry kernel's time is what the loaders' copies take
alone (session 34). Logits kernel µs (profiler, mean of 5), HBM and L2-resident cache, trees
taking turns:

    PYTHONPATH=$PWD:$PWD/scripts python3 docs/probes/dry_consumer_probe.py .probe/base .probe/dry
"""
import os
import subprocess
import sys

CODE = ("import bench_phase1_floor as f; "
        "print(f'{f._logits_us(1, \"int8\")[0]:.1f} {f._logits_us(1, \"int8\", pooled=True)[0]:.1f}')")


def main():
    trees = sys.argv[1:]
    print(f"{'tree':<24} {'round':>5} {'HBM us':>8} {'L2 us':>8}")
    for rnd in range(3):
        for tree in trees:
            root = os.path.abspath(tree)
            env = {**os.environ, "PYTHONPATH": f"{root}:{root}/scripts"}
            out = subprocess.run([sys.executable, "-c", CODE], env=env, cwd=root,
                                 capture_output=True, text=True)
            line = out.stdout.strip().splitlines()[-1] if out.returncode == 0 else \
                "failed: " + out.stderr.strip().splitlines()[-1]
            hbm, l2 = (line.split() + ["", ""])[:2]
            print(f"{tree:<24} {rnd:>5} {hbm:>8} {l2:>8}", flush=True)


if __name__ == "__main__":
    main()
