"""Phase 1's logits kept in L2 and dropped there once phase 2 has read them (off unless a
set-aside is asked for: configs.L2_SET_ASIDE_MB, CUSTOM_OPS_L2_SET_ASIDE_MB).

The logits are scratch: phase 1 writes them, phase 2 reads them, nothing reads them after the
call. Written back to DRAM they cost the key stream more than their bytes: at B=64, 64K keys,
next_n=1 (int8, H200, session 35) the logits kernel took 129 µs with its score stores left out
and 140 µs with them, for 17 MB of writes against 547 MB of reads (DRAM turning between reads
and writes). So a call that keeps them (configs.l2_keeps_logits) stores them evict_last
(`indexer_logits._store_scores`, KEEP_L2), a part of L2 is set aside for such persisting lines
(cudaLimitPersistingL2CacheSize: without it the key stream evicts them like any other line;
evict_last alone measured no change, sessions 16, 25 and 35), and after phase 2 one kernel
invalidates their lines with `discard.global.L2`: they are written to DRAM neither during the
call nor after it. Same-call A/B with 30 MB set aside (session 35, every call's stores
evict_last): B64 64K next_n=1 int8 -4.1 %, 128K -2.7 %, prefill +2.0 %.

The set-aside is the context's, so it is taken once per device on the first eager call, never
while a graph is captured, and only when asked for (CUSTOM_OPS_L2_SET_ASIDE_MB megabytes, or
configs.L2_SET_ASIDE_MB when the variable is unset; 0 leaves the device limit alone and keeps
nothing); a larger limit set by someone else is kept. It is off by default because its cost to
the other kernels of a model's step is not measured yet (NOTES, session 35).
"""
from __future__ import annotations

import os

import torch
import triton
import triton.language as tl

from . import configs
from .launch import launch
from .topk.keys import _dependent_start

LINE = 128  # bytes a discard.global.L2 drops
_DISCARD_BLOCK = 1024

_set_aside: dict[int, int] = {}  # device index -> bytes set aside (once asked outside capture)


def _runtime():
    try:
        from cuda.bindings import runtime
    except ImportError:
        try:
            from cuda import cudart as runtime  # cuda-python < 12.6 layout
        except ImportError:
            return None
    return runtime


def _take(index: int) -> int:
    """Raises the persisting-L2 limit of the current device's context (torch's, device `index`)
    to what configs.L2_SET_ASIDE_ENV asks; returns the limit after (0 without cuda-python)."""
    env = os.environ.get(configs.L2_SET_ASIDE_ENV)
    if configs.l2_set_aside_wanted(env, 1 << 62) == 0:  # off: no CUDA call at all
        return 0
    rt = _runtime()
    if rt is None:  # no cuda-python: no set-aside, nothing kept
        return 0
    ok = rt.cudaError_t.cudaSuccess
    err, device_max = rt.cudaDeviceGetAttribute(
        rt.cudaDeviceAttr.cudaDevAttrMaxPersistingL2CacheSize, index)
    if err != ok:
        return 0
    wanted = configs.l2_set_aside_wanted(env, int(device_max))
    if wanted == 0:
        return 0
    limit = rt.cudaLimit.cudaLimitPersistingL2CacheSize
    err, current = rt.cudaDeviceGetLimit(limit)
    if err != ok:
        return 0
    if int(current) < wanted:
        err, = rt.cudaDeviceSetLimit(limit, wanted)
        if err != ok:
            return int(current)
        err, current = rt.cudaDeviceGetLimit(limit)
    return int(current) if err == ok else 0


def set_aside(device: torch.device, capturing: bool) -> int:
    """Bytes of L2 the device's context sets aside for persisting lines, taken on the first
    call made outside graph capture (0 before it)."""
    index = torch.cuda.current_device() if device.index is None else device.index
    if index not in _set_aside:
        if capturing:
            return 0
        with torch.cuda.device(index):
            _set_aside[index] = _take(index)
    return _set_aside[index]


@triton.jit
def _discard_lines_kernel(ptr, n_lines, BLOCK: tl.constexpr, PDL: tl.constexpr):
    """Invalidates n_lines 128-byte L2 lines from ptr (128-byte aligned) without writing them
    back; their memory reads as undefined afterwards."""
    _dependent_start(PDL)  # phase 2's last reads are done
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    # an unused result keeps the asm an elementwise op; is_pure=False keeps it at all
    tl.inline_asm_elementwise(
        "{ .reg .pred p; setp.ne.s32 p, $2, 0; @p discard.global.L2 [$1], 128; mov.u32 $0, 0; }",
        "=r,l,r", [ptr + i.to(tl.int64) * (128 // 4), (i < n_lines).to(tl.int32)],  # fp32 ptr
        dtype=tl.int32, is_pure=False, pack=1)


def discard(buf: torch.Tensor, PDL: bool = False, launch_pdl: bool = False) -> None:
    """Drops from L2 every 128-byte line that lies wholly inside `buf` (a contiguous fp32
    tensor), after the kernels before it on the stream; the partial lines at its ends, which
    may hold other tensors' bytes, are left alone."""
    flat = buf.view(-1)
    size = flat.element_size()
    if size != 4:
        raise ValueError(f"l2.discard: buf has {size}-byte elements ({buf.dtype}); the kernel "
                         "steps through 4-byte ones")
    first = min(-flat.data_ptr() % LINE // size, flat.numel())
    lines = max((flat.numel() - first) * size // LINE, 0)
    # launched even with no whole line (one program, nothing dropped), so warming builds it
    launch(_discard_lines_kernel, (max(1, triton.cdiv(lines, _DISCARD_BLOCK)),), flat[first:],
           lines, BLOCK=_DISCARD_BLOCK, num_warps=8, PDL=PDL, launch_pdl=launch_pdl)
