"""One eager call per case between cudaProfilerStart/Stop, for ncu --profile-from-start off.
Cases as BATCH,CONTEXT,NEXT_N arguments (default: session 20's four, int8)."""
import sys
import torch
import bench_indexer as b

cases = [tuple(map(int, a.split(","))) for a in sys.argv[1:]] or \
    [(64, 65536, 1), (1, 65536, 1), (64, 65536, 4), (8, 65536, 1)]
for batch, ctx, nn in cases:
    args, kwargs = b.make_case(batch, ctx, nn, "int8", seed=0)
    kw = b.with_metadata(args, kwargs, nn)
    for _ in range(3):
        b.OP(*args, **kw)
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    b.OP(*args, **kw)
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()
    print("case", batch, ctx, nn, flush=True)
