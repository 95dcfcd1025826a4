"""The linear half of an int8 call's head sum, as digits a dot can take (phase 1, before the logits).

    Σ_g a_g · ReLU(d_g) = Σ_g ½a_g · |d_g| + Σ_g ½a_g · d_g,   d_g = q_g · k,  a_g = w_g · qscale_g

The first sum is one FFMA a head (|·| is a free operand modifier), where ReLU costs one FMNMX
more; the second is k · u with u = Σ_g ½a_g · q_g, one float vector per query token, so it is
one dot per key instead of a max per head. Why: with two to four tokens stacked the logits pass
issues ~550 instructions a key tile, a quarter of them the FMNMX (NOTES, session 32).

u has no int8 form, so it goes to the tensor cores as four signed 7-bit digits: with s0 the power
of two that puts max|u| in [32, 64)·s0,

    u = s0 · (e0 + e1/2^7 + e2/2^14 + e3/2^21) + r,   |e_i| <= 64,  |r| <= s0 · 2^-22

exactly (every step multiplies by a power of two and subtracts an integer), so the residual is
below 2^-27 of max|u|: float32's own rounding of the sum. The logits kernels dot each key with
the digits (int32, exact), join them pairwise as e0·2^7 + e1 and e2·2^7 + e3 (each below 2^28,
exact in int32), and scale: L = s1 · (p0 + p1 · 2^-14) with s1 = s0 / 2^7, every scale a power
of two so that no rounding depends on how a compiler fuses the products (the kernels must agree
bit for bit). A u below 2^-108 keeps s0 at 2^-113: its digits round to 0, which costs an
absolute 2^-113·|k|, nothing against any score a float32 sum resolves.
"""
from __future__ import annotations

import triton
import triton.language as tl

DIGITS = 4  # digits per token: rows 4r .. 4r + 3 of the digit matrix belong to query row r


@triton.jit
def _indexer_linear_kernel(q_ptr, w_ptr, qs_ptr,  # [R, H, D] int8, [R, H], [R, H]
                           dig_ptr, scale_ptr,  # int8 [R·DIGITS, D]; float32 [R]: s1 of each row
                           H: tl.constexpr, D: tl.constexpr):
    r = tl.program_id(0).to(tl.int64)
    hs = tl.arange(0, H)
    ds = tl.arange(0, D)
    q = tl.load(q_ptr + r * (H * D) + hs[:, None] * D + ds[None, :]).to(tl.float32)
    # ½a exactly as the logits kernels form it (weights·qscale in float32, then halved)
    a = tl.load(w_ptr + r * H + hs).to(tl.float32) * tl.load(qs_ptr + r * H + hs).to(tl.float32)
    u = tl.sum((a * 0.5)[:, None] * q, axis=0)  # [D]
    m = tl.max(tl.abs(u), axis=0)
    # floor(log2 m) from the exponent field (0 for zero and subnormals: the clamp below)
    e = ((m.to(tl.int32, bitcast=True) >> 23) & 255) - 127
    e = tl.minimum(tl.maximum(e, -108), 127)
    inv_s0 = ((132 - e) << 23).to(tl.float32, bitcast=True)  # 2^(5 - e), in [2^-122, 2^113]
    v = u * inv_s0  # |v| < 64, exact
    dst = dig_ptr + (r * DIGITS) * D + ds
    for i in tl.static_range(DIGITS):
        d = tl.floor(v + 0.5)  # nearest (v + 0.5 is exact: |v| < 64 has ulp >= 2^-18)
        tl.store(dst + i * D, d.to(tl.int8))
        v = (v - d) * 128.0  # the fraction, exact; |v| <= 64
    tl.store(scale_ptr + r, ((127 + e - 12) << 23).to(tl.float32, bitcast=True))  # s1 = 2^(e-12)


@triton.jit
def _linear_sums(y):
    """L / s1 [BLOCK_K, 4] of four stacked token slots from the dots y [BLOCK_K, 16] int32 of a
    key tile with their digit rows (slot t's digits in columns 4t .. 4t + 3). The digit pairs
    are joined exactly in int32 and the one float sum has one rounding with an exact product,
    so the result does not depend on how a compiler fuses or orders the arithmetic: the Triton
    and Gluon kernels compute it alike (the caller scales by s1, a power of two: exact too)."""
    BK: tl.constexpr = y.shape[0]
    ye, yo = tl.split(tl.reshape(y, [BK, 8, 2]))  # digits 2p and 2p + 1 of each (slot, pair p)
    p0, p1 = tl.split(tl.reshape(ye * 128 + yo, [BK, 4, 2]))  # exact: |e·2^7 + e'| < 2^28
    return p0.to(tl.float32) + p1.to(tl.float32) * (2.0 ** -14)


@triton.jit
def _slot_halves(lin):
    """Token slots 0-1 and 2-3 of L [BLOCK_K, 4], each [BLOCK_K, 2]."""
    BK: tl.constexpr = lin.shape[0]
    return tl.split(tl.permute(tl.reshape(lin, [BK, 2, 2]), (0, 2, 1)))


@triton.jit
def _first_slots(lin, NQ: tl.constexpr):
    """The first NQ (1, 2 or 4) token slots of L [BLOCK_K, 4]."""
    if NQ == 4:
        return lin
    lo, _ = _slot_halves(lin)
    if NQ == 1:
        lo, _ = tl.split(lo)
        lo = tl.reshape(lo, [lo.shape[0], 1])
    return lo
