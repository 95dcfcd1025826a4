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
def _vtensor_appended(cache, states):
    # The real op returns a view of virtual storage whose strides depend on the layout only;
    # output_strides reads metadata, so the fake and the real op agree on them.
    from .vtensor.cache import output_strides
    batch, length, heads, head_dim = cache.shape
    new_length = length + states.shape[1]
    return cache.new_empty_strided((batch, new_length, heads, head_dim),
                                   output_strides(cache, new_length))


@torch.library.register_fake("custom::vtensor_reserve_one_token")
def vtensor_reserve_one_token(key_cache, key_states):
    return _vtensor_appended(key_cache, key_states)  # [B, S + 1, H, D]


@torch.library.register_fake("custom::vtensor_append")
def vtensor_append(cache, states):
    return _vtensor_appended(cache, states)  # [B, S + T, H, D]


@torch.library.register_fake("custom::vtensor_append_")
def vtensor_append_(cache, states, positions):
    return None
# --- vtensor (end) ---
