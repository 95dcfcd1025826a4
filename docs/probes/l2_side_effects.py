"""Does an L2 set-aside for persisting lines slow the kernels around the indexer? (session 35)

Session 35's full run with the logits kept in L2 (30 MB set aside, every call's scores stored
evict_last, discarded after phase 2 from 8 MiB to L2's size) measured the torch-native
implementation ~16 % slower (median over the cases) than sessions 30-34 did, and the copy
bandwidth at the end of the run at 2.50 TB/s against 3.77-3.94 before: not a same-call
comparison. This one is. One process per tree and mode (the tree first on PYTHONPATH): the
copy bandwidth and the native B64 64K next_n=1 time before any indexer call, then the
indexer's graph times of a few cases (persisting lines of calls that keep nothing would pile
up), then copy and native again, then once more after cudaCtxResetPersistingL2Cache.

    [ROUNDS=1] PYTHONPATH=$PWD:$PWD/scripts python3 docs/probes/l2_side_effects.py TREE:MODE...

MODE off: no set-aside (the default); aside: 30 MB set aside by this script, the op keeping
nothing (the set-aside alone); keep: CUSTOM_OPS_L2_SET_ASIDE_MB=30 (the op takes it and keeps
the logits of calls configs.l2_keeps_logits picks).
"""
import os
import subprocess
import sys

CASES = [(64, 65536, 1), (64, 16384, 1), (8, 65536, 1), (64, 65536, 4)]

CHILD = r'''
import sys, torch
from cuda.bindings import runtime as rt
import bench_indexer as b
mb = float(sys.argv[1])
torch.zeros(1, device="cuda")
if mb > 0:
    err, = rt.cudaDeviceSetLimit(rt.cudaLimit.cudaLimitPersistingL2CacheSize, int(mb * (1 << 20)))
    assert err == rt.cudaError_t.cudaSuccess, err


def native_us():
    a, kw = b.make_case(64, 65536, 1, "int8", seed=1)
    return b.time_graph(lambda a, k: b.native_indexer(*a, **k), [(a, kw)], 5)


def state():
    return f"copy {b.copy_bandwidth() / 1e12:6.3f} TB/s  native {native_us():8.1f} us"


out = [state()]
for batch, ctx, n in CASES:
    make = lambda i, batch=batch, ctx=ctx, n=n: b.make_case(batch, ctx, n, "int8", seed=i)
    first = make(0)
    nbytes = b.case_numbers(*first, batch, ctx, n, 0)[0]
    sets = b.rotated_sets(make, first, nbytes, n)
    out.append(f"B{batch}-{ctx // 1024}K-n{n} {b.time_graph(lambda a, k: b.OP(*a, **k), sets):7.1f} us")
out.append("after:  " + state())
err, = rt.cudaCtxResetPersistingL2Cache()
out.append("reset:  " + state())
print(" | ".join(out), flush=True)
'''


def main():
    rounds = int(os.environ.get("ROUNDS", "1"))
    specs = sys.argv[1:]
    code = f"CASES = {CASES!r}\n" + CHILD
    for rnd in range(rounds):
        for spec in specs:
            tree, _, mode = spec.partition(":")
            root = os.path.abspath(tree)
            env = {**os.environ, "PYTHONPATH": f"{root}:{root}/scripts",
                   "CUSTOM_OPS_L2_SET_ASIDE_MB": "30" if mode == "keep" else "0"}
            res = subprocess.run([sys.executable, "-c", code, "30" if mode == "aside" else "0"],
                                 env=env, cwd=root, capture_output=True, text=True)
            line = res.stdout.strip().splitlines()[-1] if res.returncode == 0 else \
                "failed: " + (res.stderr.strip().splitlines() or ["?"])[-1]
            print(f"{spec:<22} {rnd}  {line}", flush=True)


if __name__ == "__main__":
    main()
