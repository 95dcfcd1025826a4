"""Probe (session 24): phase 2 kernel by kernel in both orders (sort, buckets) at B64 64K n1 and n4.

    PYTHONPATH=$PWD:$PWD/scripts python3 docs/probes/phase2_orders_probe.py
"""
import dataclasses, torch
from torch.profiler import ProfilerActivity, profile as prof
from bench_indexer import OP, make_case, with_metadata
from custom_ops.backends.cuda import configs
base = configs.TOPK
for batch, ctx, n in ((64, 65536, 4), (64, 65536, 1)):
    for label, change in (("sort", dict(bucket_max_rows=0)), ("buckets", dict(bucket_max_rows=1 << 20))):
        configs.TOPK = dataclasses.replace(base, **change)
        a, k = make_case(batch, ctx, n, "int8")
        k = with_metadata(a, k, n)
        OP(*a, **k); torch.cuda.synchronize()
        with prof(activities=[ProfilerActivity.CUDA]) as p:
            for _ in range(5):
                OP(*a, **k)
            torch.cuda.synchronize()
        print(f"B{batch}-{ctx // 1024}K-n{n} {label}")
        tot = 0
        for e in sorted(p.key_averages(), key=lambda e: -e.device_time_total)[:9]:
            if e.device_time_total > 0:
                tot += e.device_time_total / 5
                print(f"    {e.key[:60]:<60} {e.device_time_total / 5:8.1f} us/call")
        print(f"    sum {tot:.1f}")
        del a, k
        torch.cuda.empty_cache()
configs.TOPK = base
