"""Kernel for metadata calls whose arguments give the dispatcher no device (every length is None).

Such a call is always invalid (PA_BSND needs actual_seq_lengths_key); this turns the dispatcher's
'no tensor arguments' NotImplementedError into the argument error of SPEC §4.
"""
import torch

from .. import _checks


@torch.library.impl("custom::npu_vllm_quant_lightning_indexer_metadata", "CompositeExplicitAutograd")
def npu_vllm_quant_lightning_indexer_metadata(
        *, actual_seq_lengths_query, actual_seq_lengths_key, num_heads_q, num_heads_k, head_dim,
        query_quant_mode=0, key_quant_mode=0, batch_size=0, max_seqlen_q=0, max_seqlen_k=0,
        layout_query="BSND", layout_key="PA_BSND", sparse_count=2048, sparse_mode=3,
        pre_tokens=2**63 - 1, next_tokens=2**63 - 1, cmp_ratio=1, device="npu"):
    _checks.check_metadata_args(
        actual_seq_lengths_query=actual_seq_lengths_query,
        actual_seq_lengths_key=actual_seq_lengths_key, num_heads_q=num_heads_q,
        num_heads_k=num_heads_k, head_dim=head_dim, query_quant_mode=query_quant_mode,
        key_quant_mode=key_quant_mode, batch_size=batch_size, max_seqlen_q=max_seqlen_q,
        max_seqlen_k=max_seqlen_k, layout_query=layout_query, layout_key=layout_key,
        sparse_count=sparse_count, sparse_mode=sparse_mode, pre_tokens=pre_tokens,
        next_tokens=next_tokens, cmp_ratio=cmp_ratio, device=device)
    raise ValueError(f"device {device!r} has no backend of npu_vllm_quant_lightning_indexer_metadata "
                     "in this process (CUDA needs triton, an NPU needs torch_npu)")
