"""Per-row ready counters (row_flags.patch) or the persistent phase 2 (persistent_phase2.patch)
against the grid-wide waits: bit-equal results, counters back at zero, CUDA-graph times of both
in one process (alternated).

    python row_flags_probe.py [CASES [PROGRAMS_PER_SM [MAX_REGISTERS]]]

CASES: the first so many cases (0: all); PROGRAMS_PER_SM > 0 runs the persistent kernel (only
with persistent_phase2.patch applied), 0 the per-row counters between the four kernels."""
import sys, time
import torch
import bench_indexer as b
from custom_ops.backends.cuda import indexer_logits_gluon as G, plans

plans.enabled = False
flags = torch.zeros(512, dtype=torch.int32, device="cuda")
if len(sys.argv) > 2 and int(sys.argv[2]) > 0:
    from custom_ops.backends.cuda import indexer_phase2 as P2
    P2.PROGRAMS_PER_SM = int(sys.argv[2])
    P2.MAX_REGISTERS = int(sys.argv[3]) if len(sys.argv) > 3 else 0
cases = [(64, 65536, 1, "int8"), (1, 65536, 1, "int8"), (8, 65536, 1, "int8"), (64, 16384, 1, "int8"),
         (64, 4096, 1, "int8"), (32, 65536, 1, "int8"), (1, 65536, 1, "fp8"), (64, 131072, 1, "int8")]
if len(sys.argv) > 1 and int(sys.argv[1]) > 0:
    cases = cases[:int(sys.argv[1])]
for batch, ctx, nn, dt in cases:
    args, kwargs = b.make_case(batch, ctx, nn, dt, seed=0)
    kw = b.with_metadata(args, kwargs, nn)
    kw = {**kw, "return_value": True}
    G.ROW_FLAGS = None
    ref = b.OP(*args, **kw)
    torch.cuda.synchronize()
    G.ROW_FLAGS = flags
    t = time.time()
    outs = [b.OP(*args, **kw) for _ in range(3)]
    torch.cuda.synchronize()
    dt_s = time.time() - t
    same = all(torch.equal(o[0], ref[0]) and torch.equal(o[1], ref[1]) for o in outs)
    print(f"B{batch} ctx{ctx} n{nn} {dt}: flags eager equal {same}, counters zero "
          f"{bool((flags == 0).all())}, 3 calls {dt_s * 1e3:.1f} ms", flush=True)
    if not same or not bool((flags == 0).all()):
        print("   counters", flags[:4 * batch + 2].tolist())
        flags.zero_()
        continue
    copies = b.rotation_copies(b.case_numbers(args, kwargs, batch, ctx, nn, 1)[0])
    sets = [(args, kw)] + [(a, {**b.with_metadata(a, k, nn), "return_value": True})
                           for a, k in (b.make_case(batch, ctx, nn, dt, seed=i) for i in range(1, copies))]
    res = {"grid": [], "flags": []}
    for rnd in range(2):
        for mode in ("grid", "flags"):
            G.ROW_FLAGS = flags if mode == "flags" else None
            res[mode].append(min(b.time_graph(lambda a, k: b.OP(*a, **k), sets, 20) for _ in range(3)))
    G.ROW_FLAGS = flags
    g_out = b.OP(*args, **kw)
    print(f"   graph µs: grid-wide waits {' / '.join(f'{x:.1f}' for x in res['grid'])}, "
          f"row flags {' / '.join(f'{x:.1f}' for x in res['flags'])}; counters zero "
          f"{bool((flags == 0).all())}; equal after {torch.equal(g_out[0], ref[0])}", flush=True)
    G.ROW_FLAGS = None
    del sets
    torch.cuda.empty_cache()
