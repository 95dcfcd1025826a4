"""Fake (meta) implementations of every op: shapes, dtypes and devices only, never data.

torch.compile and torchair trace these; each allocates contiguous outputs like the real op.
"""
import torch

from .metadata import METADATA_LEN


@torch.library.register_fake("custom::npu_vllm_quant_lightning_indexer")
def npu_vllm_quant_lightning_indexer(
        query, key, weights, query_dequant_scale, key_dequant_scale, *,
        actual_seq_lengths_query=None, actual_seq_lengths_key=None, block_table=None,
        metadata=None, query_quant_mode=0, key_quant_mode=0, layout_query="BSND",
        layout_key="PA_BSND", sparse_count=2048, sparse_mode=3, pre_tokens=2**63 - 1,
        next_tokens=2**63 - 1, cmp_ratio=1, return_value=False):
    # [B, S1, N2, K] for BSND, [T, N2, K] for TND
    shape = (*query.shape[:-2], key.shape[2], sparse_count)
    indices = query.new_empty(shape, dtype=torch.int32)
    values = query.new_empty(shape if return_value else (0,), dtype=torch.float32)
    return indices, values


@torch.library.register_fake("custom::npu_vllm_quant_lightning_indexer_metadata")
def npu_vllm_quant_lightning_indexer_metadata(
        *, actual_seq_lengths_query, actual_seq_lengths_key, num_heads_q, num_heads_k, head_dim,
        query_quant_mode=0, key_quant_mode=0, batch_size=0, max_seqlen_q=0, max_seqlen_k=0,
        layout_query="BSND", layout_key="PA_BSND", sparse_count=2048, sparse_mode=3,
        pre_tokens=2**63 - 1, next_tokens=2**63 - 1, cmp_ratio=1, device="npu"):
    return torch.empty(METADATA_LEN, dtype=torch.int32, device=device)


# --- vtensor (begin) ---
# --- vtensor (end) ---
