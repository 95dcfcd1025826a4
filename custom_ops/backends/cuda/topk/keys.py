"""Order keys shared by the phase-2 kernels, and the layout of the threshold's row record.

A score maps to an int32 `mono` whose signed order is the float order (negative floats get their
magnitude bits flipped). Descending (mono, then index ascending) is SPEC §1.4's order, ties
included: the int64 key (mono << 32) | (2^32-1 - index) orders exactly so; no atomic
decides where a key lands in the output.
"""
from __future__ import annotations

import triton
import triton.language as tl

# mono of a -inf score, below every finite score's: pads candidate arrays (index -1).
PAD_MONO = tl.constexpr(-2139095041)
# the threshold kernel's int32 record per row: keys seen, t0, and the bucket map's base score
# and scale (float32 bits)
THR_N = tl.constexpr(0)
THR_T0 = tl.constexpr(1)
THR_BASE = tl.constexpr(2)
THR_SCALE = tl.constexpr(3)
INT32_MIN = tl.constexpr(-2147483648)
INT32_MAX = tl.constexpr(2147483647)
INT64_MIN = tl.constexpr(-9223372036854775808)
INF_MONO = tl.constexpr(2139095040)  # mono of +inf: NaNs with the sign bit clear lie above


@triton.jit
def _dependent_start(PDL: tl.constexpr):
    """PDL: this kernel was launched as a programmatic dependent of the previous one (its launch
    overlaps that kernel's tail): wait until the previous kernel's writes are visible before
    reading anything, then let the next kernel launch early in turn."""
    if PDL:
        tl.extra.cuda.gdc_wait()
        tl.extra.cuda.gdc_launch_dependents()


@triton.jit
def _store_padding(out_idx, out_val, pos, pad, RETURN_VALUE: tl.constexpr):
    """SPEC's padding at output positions pos where pad holds: index -1, value -inf."""
    tl.store(out_idx + pos, tl.full(pos.shape, -1, tl.int32), mask=pad)
    if RETURN_VALUE:
        tl.store(out_val + pos, tl.full(pos.shape, float("-inf"), tl.float32), mask=pad)


@triton.jit
def _mono(x):
    bits = x.to(tl.int32, bitcast=True)
    return tl.where(bits < 0, bits ^ 2147483647, bits)


@triton.jit
def _pack(mono, idx):
    # low word 2^32-1 - idx, i.e. ~idx as an unsigned 32-bit word (no 64-bit arithmetic)
    return (mono.to(tl.int64) << 32) | (idx ^ -1).to(tl.uint32, bitcast=True).to(tl.int64)


@triton.jit
def _index_of(key):
    """The key index packed into the low word by _pack."""
    return (4294967295 - (key & 4294967295)).to(tl.int32)


@triton.jit
def _mono_of(key):
    """The mono packed into the high word by _pack."""
    return (key >> 32).to(tl.int32)


@triton.jit
def _score_of(mono):
    return tl.where(mono < 0, mono ^ 2147483647, mono).to(tl.float32, bitcast=True)


@triton.jit
def _unsigned(mono):
    """The mono as uint32 in the same order (sign bit flipped): what bisections compare."""
    return (mono ^ INT32_MIN).to(tl.uint32, bitcast=True)


@triton.jit
def _signed(u):
    """The mono of an unsigned order key (_unsigned's inverse)."""
    return (u ^ tl.full([], 2147483648, tl.uint32)).to(tl.int32, bitcast=True)
