"""What a sample pre-pass would cost: scoring S keys of every page before phase 1, so that a
threshold exists while phase 1 runs and it can store only the scores above it (the "fewer score
bytes" design, NOTES session 36). B=64, 64K keys, next_n=1, block 64, the benchmark's inputs
(bench_indexer.make_case: a strided cache view, a permuted block table).

Each program scores the first S keys of PB pages of one row: one [64 heads, 128] x [128, PB·S]
dot (int8 -> int32; fp8 upcast to fp16, fp32 sums, as phase 1 does), ReLU, head weights, sum,
key scale, stored to [rows, pages·S]. The kernel's own device time (torch profiler, mean of 5,
L2 cleared before each call; do_bench's event timing measured the host's launch here: 35-190
µs), printed beside the phase-1 logits kernel's time of the same case for scale.

    PYTHONPATH=$PWD:$PWD/scripts python3 docs/probes/sample_prepass_probe.py
    (CPU check of the scores against torch: TRITON_INTERPRET=1 ... --check)
"""
import argparse

import torch
import triton
import triton.language as tl


@triton.jit
def _sample_kernel(q_ptr, w_ptr, k_ptr, stride_kb, ks_ptr, stride_ksb, bt_ptr, out_ptr, PAGES,
                   S: tl.constexpr, PB: tl.constexpr, FP8: tl.constexpr, DOT: tl.constexpr):
    row = tl.program_id(0)
    p0 = tl.program_id(1) * PB
    h = tl.arange(0, 64)
    d = tl.arange(0, 128)
    n = tl.arange(0, PB * S)
    page = p0 + n // S
    live = page < PAGES
    blk = tl.load(bt_ptr + row * PAGES + page, mask=live, other=0).to(tl.int64)
    q = tl.load(q_ptr + row * 64 * 128 + h[:, None] * 128 + d[None, :])
    # pages past the row read block 0 (a real block) and are not stored; [keys, D] rows of 128
    # contiguous bytes, transposed for the dot
    k = tl.load(k_ptr + blk[:, None] * stride_kb + (n % S)[:, None] * 128 + d[None, :])
    if not DOT:  # diagnosis: the loads alone (sums over D instead of the dot)
        x = tl.sum(k.to(tl.float32), axis=1)[None, :] + tl.sum(q.to(tl.float32), axis=1)[:, None]
    elif FP8:
        x = tl.dot(q.to(tl.float16), tl.trans(k.to(tl.float16)), out_dtype=tl.float32)
    else:
        x = tl.dot(q, tl.trans(k), out_dtype=tl.int32).to(tl.float32)
    w = tl.load(w_ptr + row * 64 + h)
    ks = tl.load(ks_ptr + blk * stride_ksb + n % S).to(tl.float32)
    score = tl.sum(tl.maximum(x, 0.0) * w[:, None], axis=0) * ks
    tl.store(out_ptr + row * PAGES * S + p0 * S + n, score, mask=live)


def sample_scores(query, key, weights, qscale, kscale, block_table, S, PB, dot=True):
    rows, pages = block_table.shape
    out = torch.empty((rows, pages * S), dtype=torch.float32, device=query.device)
    w = (weights.float() * qscale.float()).reshape(rows, 64).contiguous()
    _sample_kernel[(rows, triton.cdiv(pages, PB))](
        query.reshape(rows, 64, 128), w, key, key.stride(0), kscale, kscale.stride(0),
        block_table, out, pages, S=S, PB=PB, FP8=key.dtype != torch.int8, DOT=dot, num_warps=4)
    return out


def reference(query, key, weights, qscale, kscale, block_table, S):
    rows, pages = block_table.shape
    blk = block_table.long()
    k = key[blk][:, :, :S].reshape(rows, pages * S, 128).float()  # [rows, keys, D]
    q = query.reshape(rows, 64, 128).float()
    x = torch.einsum("rhd,rkd->rhk", q, k).clamp_min(0)
    w = (weights.float() * qscale.float()).reshape(rows, 64)
    ks = kscale[blk][:, :, :S].reshape(rows, pages * S).float()
    return (x * w[:, :, None]).sum(1) * ks


def kernel_us(call):
    """Device µs of the sample kernel per call, L2 cleared before each of 5 calls."""
    from torch.profiler import ProfilerActivity, profile
    flush = torch.empty(256 << 20, dtype=torch.int8, device="cuda")
    call()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as p:
        for _ in range(5):
            flush.zero_()
            call()
        torch.cuda.synchronize()
    return sum(e.device_time_total for e in p.key_averages() if "_sample_kernel" in e.key) / 5


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", action="store_true", help="small case against torch (CPU ok)")
    opts = ap.parse_args()
    if opts.check:
        g = torch.Generator().manual_seed(0)
        for fp8 in (False, True):
            rows, pages, blocks = 3, 5, 20
            if fp8:
                key = (torch.randn((2 * blocks, 64, 1, 128), generator=g) * 20).to(torch.float8_e4m3fn)
                query = (torch.randn((rows, 1, 64, 128), generator=g) * 20).to(torch.float8_e4m3fn)
            else:
                key = torch.randint(-127, 128, (2 * blocks, 64, 1, 128), generator=g, dtype=torch.int8)
                query = torch.randint(-127, 128, (rows, 1, 64, 128), generator=g, dtype=torch.int8)
            kscale = torch.rand((2 * blocks, 64, 1), generator=g).to(torch.float16)
            weights = torch.randn((rows, 1, 64), generator=g).to(torch.float16)
            qscale = torch.rand((rows, 1, 64), generator=g).to(torch.float16)
            bt = torch.randperm(blocks, generator=g)[:rows * pages].reshape(rows, pages).to(torch.int32)
            args = (query, key[::2], weights, qscale, kscale[::2], bt)
            got = sample_scores(*args, S=2, PB=2)
            want = reference(*args, S=2)
            torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-3)
            print(f"{'fp8' if fp8 else 'int8'} check ok")
        return
    import bench_indexer as bi
    import bench_phase1_floor as f
    print(f"{'case':<22} {'S':>3} {'PB':>4} {'samples/row':>11} {'prepass us':>10} {'logits us':>10} "
          f"{'in order':>9} {'no dot':>9}")
    for dtype in ("int8", "fp8"):
        a, kw = bi.make_case(64, 65536, 1, dtype)
        logits_us = f._logits_us(1, dtype)[0]
        bt = kw["block_table"]
        for S, PB in ((1, 16), (1, 32), (1, 64), (2, 32), (4, 16), (8, 8)):
            call = lambda: sample_scores(a[0], a[1], a[2], a[3], a[4], bt, S, PB)  # noqa: E731
            got = call()
            want = reference(a[0], a[1], a[2], a[3], a[4], bt, S)
            torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-2)
            us = kernel_us(call)
            # diagnosis: pages in order (block table = identity) and the loads without the dot
            ident = torch.arange(bt.numel(), device=bt.device, dtype=bt.dtype).reshape(bt.shape)
            us_id = kernel_us(lambda: sample_scores(a[0], a[1], a[2], a[3], a[4], ident, S, PB))
            us_nodot = kernel_us(
                lambda: sample_scores(a[0], a[1], a[2], a[3], a[4], bt, S, PB, dot=False))
            print(f"{'B64-64K-n1-' + dtype:<22} {S:>3} {PB:>4} {bt.shape[1] * S:>11} {us:>10.1f} "
                  f"{logits_us:>10.1f} {us_id:>9.1f} {us_nodot:>9.1f}", flush=True)

if __name__ == "__main__":
    main()
