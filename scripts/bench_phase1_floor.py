"""Where phase 1 of the CUDA indexer spends its time (one device call; NOTES.md, session 10).

    PYTHONPATH=$PWD python3 scripts/bench_phase1_floor.py [--only floor|overlap|together|read]

1. `floor`: the logits kernel's time on each bar case with the key cache read from HBM (random
   pages, as bench_indexer.py) against the same call over an L2-resident cache (every sequence's
   block table drawn from 64 blocks): the second is the kernel's compute floor. Only the logits
   kernel is timed (torch profiler); the pooled cache repeats scores, so phase 2 takes its exact
   fallback there and is not reported.
2. `overlap`: the next_n = 4 int8 inner loop in isolation, key tiles L2-resident: per [64, 128]
   key tile two [64, 128] x [128, 128] int8 dots (four query tokens' 64 heads, as two halves)
   and the epilogue (int32 -> float32, ReLU, head weights, head sums). Lines: the dots alone
   (kept alive by a row max), dots then epilogue, each half's dot issued before the other half's
   epilogue (Triton), and in Gluon two consumer warpgroups that take turns on the tensor cores
   with a loader warp (ping-pong: one's dots under the other's epilogue), against the same
   warpgroups without turns. Times are per key tile per SM; cycles at the SM clock nvidia-smi
   reports before the runs.
3. `together`: can one SM run tensor-core dots and an epilogue at the same time at all? One
   kernel, two kinds of program: "dots" programs run only the n4 tile's two int8 (or fp16) dots,
   accumulating in place (no instruction but the loads and the wgmma), "epilogue" programs only
   an epilogue of three or four instructions per score on values already in registers (no
   tensor core). Two programs start on every SM (%smid, checked) and take their roles in the
   order they start. Each line times one dots program per SM alone, one
   epilogue program per SM alone, and both on every SM, and prints how the together time
   compares with their sum and their maximum.
4. `read`: the HBM's read-only bandwidth beside the copy bandwidth the benchmark's bars use
   (a copy turns the bus between reads and writes; the logits pass almost only reads): a Triton
   reduction over 2 GiB in several shapes, the same over 8 KiB pages of a strided view (the key
   cache's pattern) in order and in random order, then the logits kernel alone on the B=64 64K
   next_n=1 cases (the benchmark's strided cache view and a contiguous copy), its bytes read
   (keys and key scales) per second against both.
"""
from __future__ import annotations

import argparse
import subprocess

import torch
import triton
import triton.language as tl

import bench_indexer as bi  # the bar cases' inputs (scripts/ is on the path of a script)

TILES = 4096  # key tiles per program in the inner-loop runs
POOL = 64  # distinct key tiles (L2-resident)


def _logits_us(n, dtype, pooled=False, contiguous=False):
    """The logits kernel's µs per call (torch profiler, mean of 5) on the B=64 64K case, its
    key cache read from HBM or, pooled, L2-resident; the benchmark's strided cache view or
    (contiguous) a copy of it; and the case's inputs."""
    from torch.profiler import ProfilerActivity, profile
    a, kw = bi.make_case(64, 65536, n, dtype)
    if contiguous:
        a = (a[0], a[1].contiguous(), a[2], a[3], a[4].contiguous())
    if pooled:
        bt = kw["block_table"]
        cols = torch.arange(bt.shape[1], device="cuda", dtype=torch.int32) % POOL
        kw["block_table"] = cols[None, :].expand_as(bt).contiguous()
    kw = bi.with_metadata(a, kw, n)
    for _ in range(3):
        bi.OP(*a, **kw)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as p:
        for _ in range(5):
            bi.OP(*a, **kw)
        torch.cuda.synchronize()
    return sum(e.device_time_total for e in p.key_averages() if "logits" in e.key) / 5, a


def floor():
    print(f"{'case':<22} {'HBM us':>9} {'L2 us':>9} {'L2/HBM':>7}")
    for n in (1, 4):
        for dtype in ("int8", "fp8"):
            times = [_logits_us(n, dtype, pooled)[0] for pooled in (False, True)]
            print(f"{f'B64-64K-n{n}-{dtype}':<22} {times[0]:9.1f} {times[1]:9.1f} "
                  f"{times[1] / times[0]:7.2f}", flush=True)


@triton.jit
def _head_sums(x, w, N: tl.constexpr):
    y = tl.maximum(x.to(tl.float32), 0.0) * w[None, :]
    return tl.sum(tl.reshape(y, [64, N // 64, 64]), axis=2)


@triton.jit
def _tiles_kernel(q_ptr, k_ptr, w_ptr, out_ptr, ITERS, NT: tl.constexpr, MODE: tl.constexpr,
                  N: tl.constexpr):
    """MODE 0: dots only; 1: dots then epilogue; 2: each dot issued before the other half's
    epilogue (the previous tile's second half)."""
    pid = tl.program_id(0)
    offs_k = tl.arange(0, 64)
    offs_d = tl.arange(0, 128)
    offs_n = tl.arange(0, N)
    q0 = tl.load(q_ptr + offs_n[:, None] * 128 + offs_d[None, :])
    q1 = tl.load(q_ptr + (N + offs_n)[:, None] * 128 + offs_d[None, :])
    w0 = tl.load(w_ptr + offs_n)
    w1 = tl.load(w_ptr + N + offs_n)
    acc = tl.zeros([64, N // 64], tl.float32)
    keep = tl.zeros([64], tl.int32)
    xp = tl.zeros([64, N], tl.int32)
    for i in tl.range(0, ITERS, num_stages=3):
        t = (i + pid) % NT
        k = tl.load(k_ptr + (t * 64 + offs_k)[:, None] * 128 + offs_d[None, :])
        x0 = tl.dot(k, tl.trans(q0), out_dtype=tl.int32)
        if MODE == 0:
            keep += tl.max(x0, axis=1)
            keep += tl.max(tl.dot(k, tl.trans(q1), out_dtype=tl.int32), axis=1)
        elif MODE == 1:
            acc += _head_sums(x0, w0, N)
            acc += _head_sums(tl.dot(k, tl.trans(q1), out_dtype=tl.int32), w1, N)
        else:
            acc += _head_sums(xp, w1, N)
            xp = tl.dot(k, tl.trans(q1), out_dtype=tl.int32)
            acc += _head_sums(x0, w0, N)
    tl.store(out_ptr + pid * 64 + offs_k, tl.sum(acc, axis=1) + keep.to(tl.float32))


# the ping-pong kernel needs Gluon (Triton >= 3.5)
try:
    from triton.experimental import gluon
    from triton.experimental.gluon import language as gl
    from triton.experimental.gluon.language.nvidia.hopper import (mbarrier, tma, warpgroup_mma,
                                                                  warpgroup_mma_wait)
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor
except ImportError:
    gluon = None

if gluon is not None:
    @gluon.jit
    def _pp_head_sums(x, w):
        y = gl.maximum(x.to(gl.float32), 0.0) * gl.expand_dims(w, 0)
        return gl.sum(gl.reshape(y, [64, 2, 64]), axis=2)

    @gluon.jit
    def _pp_consumer(k_smem, q_smem, ready, empty, turn, w_ptr, out_ptr, ITERS,
                     WG: gl.constexpr, STAGES: gl.constexpr, TURNS: gl.constexpr):
        mma: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1],
                                                      instr_shape=[16, 128, 32])
        q0 = q_smem.index(0).permute((1, 0))
        q1 = q_smem.index(1).permute((1, 0))
        offs_n = gl.arange(0, 128, layout=gl.SliceLayout(0, mma))
        w0 = gl.load(w_ptr + offs_n)
        w1 = gl.load(w_ptr + 128 + offs_n)
        zero = gl.zeros([64, 128], gl.int32, mma)
        acc = _pp_head_sums(zero, w0) * 0.0
        c = 0
        for j in range(WG, ITERS, 2):  # warpgroup WG takes every other tile
            s = j % STAGES
            mbarrier.wait(ready.index(s), (j // STAGES) & 1)
            if TURNS:  # wait for the other warpgroup's dots to finish
                mbarrier.wait(turn.index(WG), (c + 1 - WG) & 1)
            x0 = warpgroup_mma(k_smem.index(s), q0, zero, use_acc=False, is_async=True)
            x1 = warpgroup_mma(k_smem.index(s), q1, zero, use_acc=False, is_async=True)
            x0, x1 = warpgroup_mma_wait(num_outstanding=0, deps=(x0, x1))
            if TURNS:
                mbarrier.arrive(turn.index(1 - WG))
            mbarrier.arrive(empty.index(s))
            acc += _pp_head_sums(x0, w0) + _pp_head_sums(x1, w1)
            c += 1
        r = gl.sum(acc, axis=1)
        offs = gl.arange(0, 64, layout=r.type.layout)
        gl.store(out_ptr + (gl.program_id(0) * 2 + WG) * 64 + offs, r)

    @gluon.jit
    def _pp_loader(k_desc, k_smem, ready, empty, ITERS, NT: gl.constexpr, STAGES: gl.constexpr):
        for j in range(ITERS):
            s = j % STAGES
            mbarrier.wait(empty.index(s), ((j // STAGES) & 1) ^ 1)
            mbarrier.expect(ready.index(s), k_desc.block_type.nbytes)
            tma.async_copy_global_to_shared(k_desc, [((gl.program_id(0) + j) % NT) * 64, 0],
                                            ready.index(s), k_smem.index(s))

    @gluon.jit
    def _pingpong_kernel(k_desc, q_desc, w_ptr, out_ptr, ITERS, NT: gl.constexpr,
                         STAGES: gl.constexpr, TURNS: gl.constexpr):
        k_smem = gl.allocate_shared_memory(gl.int8, [STAGES, 64, 128], k_desc.layout)
        q_smem = gl.allocate_shared_memory(gl.int8, [2, 128, 128], q_desc.layout)
        ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
        empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
        turn = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
        qbar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
        for i in gl.static_range(STAGES):
            mbarrier.init(ready.index(i), count=1)
            mbarrier.init(empty.index(i), count=1)
        for i in gl.static_range(2):
            mbarrier.init(turn.index(i), count=1)
        mbarrier.init(qbar, count=1)
        mbarrier.expect(qbar, 2 * q_desc.block_type.nbytes)
        tma.async_copy_global_to_shared(q_desc, [0, 0], qbar, q_smem.index(0))
        tma.async_copy_global_to_shared(q_desc, [128, 0], qbar, q_smem.index(1))
        mbarrier.wait(qbar, phase=0)
        WG0: gl.constexpr = 0
        WG1: gl.constexpr = 1
        gl.warp_specialize([(_pp_consumer, (k_smem, q_smem, ready, empty, turn, w_ptr, out_ptr,
                                            ITERS, WG0, STAGES, TURNS)),
                            (_pp_consumer, (k_smem, q_smem, ready, empty, turn, w_ptr, out_ptr,
                                            ITERS, WG1, STAGES, TURNS)),
                            (_pp_loader, (k_desc, k_smem, ready, empty, ITERS, NT, STAGES))],
                           [4, 1], [232, 40])


def overlap():
    out = subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm,clocks.max.sm",
                          "--format=csv,noheader"], capture_output=True, text=True).stdout.strip()
    clock = float(out.split(",")[1].split()[0]) * 1e6
    print(f"SM clock (now, max): {out}; cycles below at the max clock")
    g = torch.Generator(device="cuda").manual_seed(0)
    q = torch.randint(-127, 128, (256, 128), generator=g, device="cuda", dtype=torch.int8)
    k = torch.randint(-127, 128, (POOL * 64, 128), generator=g, device="cuda", dtype=torch.int8)
    w = torch.randn(256, generator=g, device="cuda")
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    ops = 2 * 64 * 256 * 128  # per key tile

    def line(label, fn, tiles_per_sm):
        fn()
        torch.cuda.synchronize()
        ms = triton.testing.do_bench(fn, warmup=5, rep=50)
        per_tile = ms * 1e-3 / tiles_per_sm
        tops = ops * tiles_per_sm * sms / (ms * 1e-3) / 1e12
        print(f"{label:<44} {ms * 1e3:9.1f} us {per_tile * 1e9:7.1f} ns/tile/SM "
              f"{per_tile * clock:6.0f} cycles {tops:6.0f} TOPS", flush=True)

    for mode, label in ((0, "triton: dots only (row max kept)"), (1, "triton: dots, then epilogue"),
                        (2, "triton: dot before the other half's epilogue")):
        res = torch.empty(sms * 2 * 64, device="cuda")
        line(label, lambda: _tiles_kernel[(sms * 2,)](q, k, w, res, TILES, NT=POOL, MODE=mode,
                                                      N=128, num_warps=4), 2 * TILES)
    if gluon is None:
        print("gluon: not available in this Triton")
        return
    kd = TensorDescriptor(k, list(k.shape), list(k.stride()), [64, 128],
                          gl.NVMMASharedLayout.get_default_for([64, 128], gl.int8))
    qd = TensorDescriptor(q, list(q.shape), list(q.stride()), [128, 128],
                          gl.NVMMASharedLayout.get_default_for([128, 128], gl.int8))
    res = torch.empty(2 * 64, device="cuda")  # check one program against torch first
    _pingpong_kernel[(1,)](kd, qd, w, res, 6, NT=POOL, STAGES=4, TURNS=True, num_warps=4)
    ref = torch.zeros(2, 64, device="cuda")
    for t in range(6):
        ref[t % 2] += ((k[t * 64:(t + 1) * 64].float() @ q.float().T).clamp_min(0) * w).sum(1)
    torch.testing.assert_close(res, ref.flatten(), rtol=1e-5, atol=1.0)
    for turns in (False, True):
        res = torch.empty(sms * 2 * 64, device="cuda")
        label = "gluon: 2 warpgroups " + ("taking turns (ping-pong)" if turns else "without turns")
        line(label, lambda: _pingpong_kernel[(sms,)](kd, qd, w, res, 2 * TILES, NT=POOL, STAGES=4,
                                                     TURNS=turns, num_warps=4), 2 * TILES)


@triton.jit
def _smid():
    return tl.inline_asm_elementwise("mov.u32 $0, %smid;", "=r", [], dtype=tl.int32, is_pure=False,
                                     pack=1)


@triton.jit
def _together_kernel(q_ptr, k_ptr, w_ptr, out_ptr, cnt_ptr, ITERS, FIRST, SECOND,
                     NT: tl.constexpr, EPI: tl.constexpr):
    """The first program to start on an SM takes role FIRST, the second SECOND, and both wait
    until both have started (the caller checks that every SM got two). Roles: 0 none, 1 the
    dots of ITERS key tiles, 2 the epilogue of as many tiles (two [64, 128] halves each). EPI 0:
    FADD, FMNMX, FFMA per score; 1: LOP3, I2FP, FMNMX, FFMA (the int8 epilogue and the xor that
    makes each tile's values new); 2: FADD, FADD |f|, FFMA (no ALU-pipe instruction)."""
    pid = tl.program_id(0)
    sm = _smid()
    role = tl.where(tl.atomic_add(cnt_ptr + sm, 1) == 0, FIRST, SECOND)
    spins = 0
    while (tl.atomic_add(cnt_ptr + sm, 0) < 2) & (spins < 1000000):
        spins += 1
    offs_k = tl.arange(0, 64)
    offs_d = tl.arange(0, 128)
    offs_n = tl.arange(0, 128)
    q0 = tl.load(q_ptr + offs_n[:, None] * 128 + offs_d[None, :])
    w = tl.load(w_ptr + offs_n)
    r = tl.zeros([64], tl.float32)
    if role == 1:
        q1 = tl.load(q_ptr + (128 + offs_n)[:, None] * 128 + offs_d[None, :])
        ACC: tl.constexpr = tl.int32 if q0.dtype == tl.int8 else tl.float32
        a0 = tl.zeros([64, 128], ACC)
        a1 = tl.zeros([64, 128], ACC)
        for i in tl.range(0, ITERS, num_stages=3):
            k = tl.load(k_ptr + (((i + pid) % NT) * 64 + offs_k)[:, None] * 128 + offs_d[None, :])
            a0 = tl.dot(k, tl.trans(q0), a0, out_dtype=ACC)
            a1 = tl.dot(k, tl.trans(q1), a1, out_dtype=ACC)
        r = tl.sum((a0 + a1).to(tl.float32), axis=1)
    elif role == 2:
        # values in the dot accumulator's register layout, as the real epilogue gets them
        k = tl.load(k_ptr + ((pid % NT) * 64 + offs_k)[:, None] * 128 + offs_d[None, :])
        base = tl.dot(k.to(tl.int8), tl.trans(q0.to(tl.int8)), out_dtype=tl.int32)
        basef = base.to(tl.float32)
        acc = tl.zeros([64, 2], tl.float32)
        for i in range(0, 2 * ITERS):
            if EPI == 0:
                y = tl.maximum(basef + i.to(tl.float32), 0.0) * w[None, :]
            elif EPI == 1:
                y = tl.maximum((base ^ i).to(tl.float32), 0.0) * w[None, :]
            else:
                f = basef + i.to(tl.float32)
                y = (f + tl.abs(f)) * w[None, :]
            acc += tl.sum(tl.reshape(y, [64, 2, 64]), axis=2)
        r = tl.sum(acc, axis=1)
    tl.store(out_ptr + pid * 64 + offs_k, r)


def together():
    out = subprocess.run(["nvidia-smi", "--query-gpu=clocks.max.sm", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout.strip()
    clock = float(out.split()[0]) * 1e6
    g = torch.Generator(device="cuda").manual_seed(0)
    q = torch.randint(-127, 128, (256, 128), generator=g, device="cuda", dtype=torch.int8)
    k = torch.randint(-127, 128, (POOL * 64, 128), generator=g, device="cuda", dtype=torch.int8)
    w = torch.randn(256, generator=g, device="cuda")
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    res = torch.empty(2 * sms * 64, device="cuda")
    cnt = torch.zeros(256, device="cuda", dtype=torch.int32)
    print(f"cycles per key tile per SM at {clock / 1e6:.0f} MHz; one dots and/or one epilogue "
          "program on every SM")
    print(f"{'dots':<8} {'epilogue':<24} {'dots':>6} {'epi':>6} {'both':>6} "
          f"{'both/sum':>9} {'both/max':>9}")
    epis = ("FADD FMNMX FFMA", "LOP3 I2FP FMNMX FFMA", "FADD FADD|f| FFMA")
    for dt in (torch.int8, torch.float16):
        qq, kk = q.to(dt), k.to(dt)
        for epi, label in enumerate(epis):
            cyc = []
            for first, second in ((1, 0), (0, 2), (1, 2)):
                def fn():
                    cnt.zero_()
                    _together_kernel[(2 * sms,)](qq, kk, w, res, cnt, TILES, first, second,
                                                 NT=POOL, EPI=epi, num_warps=4)
                fn()
                torch.cuda.synchronize()
                assert bool((cnt[:sms] == 2).all()) and int(cnt.sum()) == 2 * sms, \
                    f"not two programs on every SM: {cnt[:sms].tolist()}"
                cyc.append(triton.testing.do_bench(fn, warmup=5, rep=50) * 1e-3 / TILES * clock)
            d, e, b = cyc
            print(f"{str(dt)[6:]:<8} {label:<24} {d:6.0f} {e:6.0f} {b:6.0f} {b / (d + e):9.2f} "
                  f"{b / max(d, e):9.2f}", flush=True)


@triton.jit
def _read_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr, ITERS: tl.constexpr):
    """Program i reads BLOCK·ITERS consecutive int32 (all ITERS loads issued before the sum
    needs them) and writes one word: a read stream with almost no writes."""
    base = tl.program_id(0).to(tl.int64) * (BLOCK * ITERS)
    acc = tl.zeros([BLOCK], tl.int32)
    for i in tl.static_range(ITERS):
        acc += tl.load(x_ptr + base + i * BLOCK + tl.arange(0, BLOCK))
    tl.store(out_ptr + tl.program_id(0), tl.sum(acc, 0))


@triton.jit
def _paged_read_kernel(x_ptr, blocks_ptr, out_ptr, BLOCK: tl.constexpr, PER: tl.constexpr):
    """Program i reads blocks[i·PER .. i·PER + PER) of BLOCK int32 each, block b at 2·b·BLOCK
    (every other block of twice as many, like the benchmark's strided cache view)."""
    acc = tl.zeros([BLOCK], tl.int32)
    for j in tl.static_range(PER):
        b = tl.load(blocks_ptr + tl.program_id(0) * PER + j).to(tl.int64)
        acc += tl.load(x_ptr + 2 * b * BLOCK + tl.arange(0, BLOCK))
    tl.store(out_ptr + tl.program_id(0), tl.sum(acc, 0))


def read():
    copy = bi.copy_bandwidth()
    x = torch.empty(1 << 29, dtype=torch.int32, device="cuda").random_()  # 2 GiB
    print(f"copy bandwidth (bytes read + written) {copy / 1e12:.3f} TB/s")
    print(f"{'read-only stream':<34} {'us':>8} {'TB/s':>7} {'/ copy':>7}")
    best = 0.0
    for block, iters, warps in ((1024, 1, 4), (1024, 4, 4), (2048, 4, 8), (4096, 2, 8),
                                (4096, 8, 8)):
        grid = x.numel() // (block * iters)
        out = torch.empty(grid, dtype=torch.int32, device="cuda")
        us = bi.median_us(lambda: _read_kernel[(grid,)](x, out, block, iters, num_warps=warps))
        bw = x.numel() * 4 / us * 1e-6
        best = max(best, bw)
        print(f"{f'triton {block * 4 // 1024} KiB x {iters}, {warps} warps':<34} {us:8.1f} "
              f"{bw:7.3f} {bw * 1e12 / copy:7.3f}", flush=True)
    # the key cache's pattern: 8 KiB pages (64 keys of 128 B) of a strided view, in order and
    # in a random order; 2 GiB read out of a 4 GiB buffer
    x2 = torch.empty(1 << 30, dtype=torch.int32, device="cuda").random_()
    nblk = x2.numel() // (2 * 2048)
    for order in ("in order", "random"):
        blocks = torch.arange(nblk, dtype=torch.int32, device="cuda")
        if order == "random":
            blocks = blocks[torch.randperm(nblk, device="cuda")]
        for per, warps in ((1, 4), (4, 8)):
            out = torch.empty(nblk // per, dtype=torch.int32, device="cuda")
            us = bi.median_us(lambda: _paged_read_kernel[(nblk // per,)](
                x2, blocks, out, 2048, per, num_warps=warps))
            bw = nblk * 2048 * 4 / us * 1e-6
            print(f"{f'8 KiB pages {order}, {per} a program':<34} {us:8.1f} {bw:7.3f} "
                  f"{bw * 1e12 / copy:7.3f}", flush=True)
    print(f"{'logits kernel alone':<34} {'us':>8} {'GB read':>8} {'TB/s':>7} {'/ read':>7} "
          f"{'/ copy':>7}")
    for dtype in ("int8", "fp8"):
        for contiguous in (False, True):
            us, a = _logits_us(1, dtype, contiguous=contiguous)
            # keys and key scales of every visible token: the cache holds exactly the visible
            # blocks (every other block of twice as many where it is the strided view)
            nbytes = sum(t.numel() * t.element_size() for t in (a[1], a[4]))
            bw = nbytes / us * 1e-6
            tag = f"B64-64K-n1-{dtype}, {'contiguous' if contiguous else 'strided'} cache"
            print(f"{tag:<34} {us:8.1f} {nbytes / 1e9:8.3f} {bw:7.3f} {bw / best:7.3f} "
                  f"{bw * 1e12 / copy:7.3f}", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", choices=("floor", "overlap", "together", "read"))
    opts = ap.parse_args()
    if opts.only in (None, "floor"):
        floor()
    if opts.only in (None, "overlap"):
        overlap()
    if opts.only in (None, "together"):
        together()
    if opts.only in (None, "read"):
        read()


if __name__ == "__main__":
    main()
