"""The tensor-core roof of the indexer's dots on this GPU, measured now.

The roof of a dtype is the faster of two measurements (each the best of TRIALS medians):
- cuBLAS's dense GEMM (square, the best of two sizes): `torch._int_mm` for int8, `torch.mm` in
  fp16 and bf16 (float32 sums) for fp8, whose dots run on the 16-bit tensor cores (SPEC §1.4
  asks for float32 products; e4m3 upcasts exactly to fp16 or bf16, and Hopper's fp8 MMA sums
  with ~14 bits), the faster of the two;
- the indexer's own tile with nothing but the dots: [64 keys, 128] x [128, 256] (next_n 4 x 64
  heads) accumulated in place over an L2-resident pool of key tiles, two programs per SM
  (cuBLAS's int8 GEMM reaches about half of what this loop does on an H200).

    PYTHONPATH=$PWD python3 scripts/tensor_roof.py
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from bench_indexer import median_us  # (scripts/ is on the path of a script)

POOL = 64  # key tiles the programs cycle through: 512 KiB of int8, L2-resident
TILES = 4096  # key tiles per program
TRIALS = 3  # each rate is the best of this many medians (the clocks move under a tensor load)
# dense tensor rates from NVIDIA's datasheets (boost clock), printed beside the measured ones
DATASHEET = {"H200": {"int8": 1979e12, "fp8": 989.5e12}, "H100": {"int8": 1979e12, "fp8": 989.5e12}}


@triton.jit
def _dots_kernel(k_ptr, q_ptr, out_ptr, ITERS, POOL: tl.constexpr, INT8: tl.constexpr):
    pid = tl.program_id(0)
    rows = tl.arange(0, 64)
    d = tl.arange(0, 128)
    q = tl.load(q_ptr + tl.arange(0, 256)[None, :] * 128 + d[:, None])  # [128, 256]
    if INT8:
        acc = tl.zeros([64, 256], tl.int32)
    else:
        acc = tl.zeros([64, 256], tl.float32)
    for i in range(ITERS):
        t = (pid + i) % POOL
        k = tl.load(k_ptr + (t * 64 + rows)[:, None] * 128 + d[None, :])
        acc = tl.dot(k, q, acc, out_dtype=acc.dtype)
    tl.store(out_ptr + pid * 64 + rows, tl.max(acc, 1).to(tl.float32))  # keeps the dots


def _operand(shape, dtype):
    if dtype == torch.int8:
        return torch.randint(-127, 128, shape, dtype=dtype, device="cuda")
    return torch.randn(shape, device="cuda").to(dtype)


def gemm_rate(dtype) -> float:
    """cuBLAS dense GEMM, ops per second, the best of 8192^3 and 16384^3."""
    torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
    torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False
    mm = torch._int_mm if dtype == torch.int8 else torch.mm
    best = 0.0
    for n in (8192, 16384):
        a = _operand((n, n), dtype)
        b = a.t().contiguous().t()  # column-major B: cuBLAS's fastest int8 form
        us = min(median_us(lambda: mm(a, b), reps=10, warmup=1) for _ in range(TRIALS))
        best = max(best, 2 * n ** 3 / (us * 1e-6))
    return best


def tile_rate(dtype) -> float:
    """The indexer's tile, dots only, ops per second."""
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    keys = _operand((POOL * 64, 128), dtype)
    query = _operand((256, 128), dtype)
    out = torch.empty(2 * sms * 64, device="cuda")
    us = min(median_us(lambda: _dots_kernel[(2 * sms,)](keys, query, out, TILES, POOL=POOL,
                                                        INT8=dtype == torch.int8, num_warps=4),
                       reps=10, warmup=1) for _ in range(TRIALS))
    return 2 * 64 * 128 * 256 * TILES * 2 * sms / (us * 1e-6)


def measurements() -> dict:
    """{"int8": [(ops/s, what), ...], "fp8": [...]}: every measurement of each dtype's roof."""
    found = {}
    for name, dtypes in (("int8", (torch.int8,)), ("fp8", (torch.float16, torch.bfloat16))):
        found[name] = [(gemm_rate(t), f"cuBLAS {str(t)[6:]}") for t in dtypes]
        found[name] += [(tile_rate(t), f"tile {str(t)[6:]}") for t in dtypes]
    torch.cuda.empty_cache()
    return found


def datasheet() -> dict:
    """This GPU's DATASHEET rates ({} for a GPU not listed)."""
    name = torch.cuda.get_device_name()
    return next((rates for model, rates in DATASHEET.items() if model in name), {})


def describe(found: dict) -> str:
    """One line per dtype: the roof (the fastest measurement), every measurement, and the
    datasheet's rate where this GPU is in DATASHEET."""
    sheet = datasheet()
    return "\n".join(
        f"{dtype:<5} roof {max(rates)[0] / 1e12:5.0f} T ops/s ({max(rates)[1]}); measured: "
        + ", ".join(f"{what} {rate / 1e12:.0f}" for rate, what in rates)
        + (f"; datasheet {sheet[dtype] / 1e12:.0f}" if dtype in sheet else "")
        for dtype, rates in found.items())


if __name__ == "__main__":
    print(describe(measurements()))
