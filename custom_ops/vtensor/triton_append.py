"""CUDA kernel of ``vtensor_append_``: one masked store per (sequence, token, head) row.

A single launch, so the op costs what a static cache's slice write costs inside a CUDA graph.
Rows outside [0, min(limit[b], S)) are not stored; on a virtual cache they are counted into
``dropped`` so that ``custom_ops.vtensor.check`` can raise after the graph has run.
"""
import torch
import triton
import triton.language as tl


@triton.jit
def _vtensor_append_kernel(
        cache_ptr, states_ptr, positions_ptr, limits_ptr, dropped_ptr,
        steps, heads, length,
        cache_stride_b, cache_stride_s, cache_stride_h,
        states_stride_b, states_stride_t, states_stride_h,
        HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr, HAS_LIMITS: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    head = pid % heads
    token = (pid // heads) % steps
    seq = pid // (heads * steps)
    position = tl.load(positions_ptr + seq).to(tl.int64) + token
    limit = length
    if HAS_LIMITS:
        limit = tl.minimum(tl.load(limits_ptr + seq), length)
    inside = (position >= 0) & (position < limit)
    offs = tl.arange(0, BLOCK_D)
    in_row = offs < HEAD_DIM
    row = tl.load(states_ptr + seq * states_stride_b + token * states_stride_t
                  + head * states_stride_h + offs, mask=in_row)
    target = cache_ptr + seq * cache_stride_b + position * cache_stride_s + head * cache_stride_h
    tl.store(target + offs, row, mask=in_row & inside)
    if HAS_LIMITS:
        tl.atomic_add(dropped_ptr, 1, mask=(head == 0) & (position >= limit) | (head == 0)
                      & (position < 0))


def vtensor_append_cuda(cache: torch.Tensor, states: torch.Tensor, positions: torch.Tensor,
                        limits: torch.Tensor | None, dropped: torch.Tensor | None) -> None:
    """cache [B, S, H, D] (any strides, D contiguous), states [B, T, H, D], positions [B]."""
    batch, steps, heads, head_dim = states.shape
    states = states.contiguous()
    grid = (batch * steps * heads,)
    _vtensor_append_kernel[grid](
        cache, states, positions, limits if limits is not None else positions,
        dropped if dropped is not None else positions,
        steps, heads, cache.shape[1],
        cache.stride(0), cache.stride(1), cache.stride(2),
        states.stride(0), states.stride(1), states.stride(2),
        HEAD_DIM=head_dim, BLOCK_D=triton.next_power_of_2(head_dim),
        HAS_LIMITS=limits is not None)
