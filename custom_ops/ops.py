"""Typed public API: thin wrappers over torch.ops.custom with shapes in their docstrings."""
from __future__ import annotations

from typing import Optional

import torch

from . import _checks

_INT64_MAX = 2**63 - 1


def npu_vllm_quant_lightning_indexer(
    query: torch.Tensor,  # [B, S1, 64, 128] (BSND) or [T, 64, 128] (TND); int8 or float8_e4m3fn
    key: torch.Tensor,  # [num_blocks, block_size, 1, 128], same dtype as query
    weights: torch.Tensor,  # [B, S1, 64] / [T, 64]; float16 or float32
    query_dequant_scale: torch.Tensor,  # [B, S1, 64] / [T, 64]
    key_dequant_scale: torch.Tensor,  # [num_blocks, block_size, 1]
    *,
    actual_seq_lengths_query: Optional[torch.Tensor] = None,  # [B] int32 (TND: cumulative, or [B+1])
    actual_seq_lengths_key: Optional[torch.Tensor] = None,  # [B] int32, original lengths
    block_table: Optional[torch.Tensor] = None,  # [B, max_blocks_per_seq] int32
    metadata: Optional[torch.Tensor] = None,  # [1024] int32 from the metadata op
    query_quant_mode: int = 0,
    key_quant_mode: int = 0,
    layout_query: str = "BSND",
    layout_key: str = "PA_BSND",
    sparse_count: int = 2048,
    sparse_mode: int = 3,
    pre_tokens: int = _INT64_MAX,
    next_tokens: int = _INT64_MAX,
    cmp_ratio: int = 1,
    return_value: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Top-`sparse_count` compressed keys per query token (SPEC §1).

    Returns sparse_indices int32 [B, S1, 1, K] / [T, 1, K] (score descending, ties to the smaller
    index, -1 padding) and sparse_values float32 of the same shape (-inf padding) when
    return_value, else an empty [0] tensor.
    """
    return torch.ops.custom.npu_vllm_quant_lightning_indexer(
        query, key, weights, query_dequant_scale, key_dequant_scale,
        actual_seq_lengths_query=actual_seq_lengths_query,
        actual_seq_lengths_key=actual_seq_lengths_key, block_table=block_table,
        metadata=metadata, query_quant_mode=query_quant_mode, key_quant_mode=key_quant_mode,
        layout_query=layout_query, layout_key=layout_key, sparse_count=sparse_count,
        sparse_mode=sparse_mode, pre_tokens=pre_tokens, next_tokens=next_tokens,
        cmp_ratio=cmp_ratio, return_value=return_value)


def npu_vllm_quant_lightning_indexer_metadata(
    *,
    actual_seq_lengths_query: Optional[torch.Tensor],  # [B] / [B+1] int32 on `device`
    actual_seq_lengths_key: Optional[torch.Tensor],  # [B] int32 on `device`
    num_heads_q: int = 64,
    num_heads_k: int = 1,
    head_dim: int = 128,
    query_quant_mode: int = 0,
    key_quant_mode: int = 0,
    batch_size: int = 0,
    max_seqlen_q: int = 0,
    max_seqlen_k: int = 0,
    layout_query: str = "BSND",
    layout_key: str = "PA_BSND",
    sparse_count: int = 2048,
    sparse_mode: int = 3,
    pre_tokens: int = _INT64_MAX,
    next_tokens: int = _INT64_MAX,
    cmp_ratio: int = 1,
    device: Optional[str] = None,
) -> torch.Tensor:
    """The indexer's work split for `device`: int32 [1024] in format v1 (custom_ops.metadata).

    `device` None: where the length tensors are (on an NPU that is the schema's default "npu").
    An explicit device is checked here: the dispatcher drops a keyword equal to its schema
    default, so the kernel could not tell device="npu" from no device."""
    if device is not None:
        _checks.check_metadata_device(actual_seq_lengths_query, actual_seq_lengths_key, device)
    return torch.ops.custom.npu_vllm_quant_lightning_indexer_metadata(
        actual_seq_lengths_query=actual_seq_lengths_query,
        actual_seq_lengths_key=actual_seq_lengths_key, num_heads_q=num_heads_q,
        num_heads_k=num_heads_k, head_dim=head_dim, query_quant_mode=query_quant_mode,
        key_quant_mode=key_quant_mode, batch_size=batch_size, max_seqlen_q=max_seqlen_q,
        max_seqlen_k=max_seqlen_k, layout_query=layout_query, layout_key=layout_key,
        sparse_count=sparse_count, sparse_mode=sparse_mode, pre_tokens=pre_tokens,
        next_tokens=next_tokens, cmp_ratio=cmp_ratio,
        **({} if device is None else {"device": device}))
