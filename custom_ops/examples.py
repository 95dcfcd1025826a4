"""The operator doc's two call examples (single op, and a compiled module), device-agnostic.

They run unchanged from the Ascend doc apart from the device (`.npu()` -> `.to(device)`) and the
compile backend; `python -m custom_ops` and the graph-mode tests use them.
"""
from __future__ import annotations

import numpy as np
import torch
import torch.nn as nn

N1, N2, D = 64, 1, 128
INT64_MAX = (1 << 63) - 1


def seed_inputs(device, *, b=24, s1=4, s2=512, block_size=128, cmp_ratio=1, sparse_mode=0,
                sparse_count=512, seed=0):
    """The doc's inputs: int8 query/key in [-128, 127], float16 scales in [0, 10], weights in [0, 0.01]."""
    np.random.seed(seed)
    max_block_table_num = (s2 + block_size - 1) // block_size
    block_table = torch.tensor([range(b * max_block_table_num)], dtype=torch.int32).reshape(b, -1)
    key = torch.tensor(np.random.uniform(-128, 127, (b * max_block_table_num, block_size, N2, D))).to(torch.int8)
    key_dequant_scale = torch.tensor(np.random.uniform(0, 10, (b * max_block_table_num, block_size, N2)))
    key_dequant_scale = key_dequant_scale.to(torch.float16)
    query = torch.tensor(np.random.uniform(-128, 127, (b, s1, N1, D))).to(torch.int8)
    query_dequant_scale = torch.tensor(np.random.uniform(0, 10, (b, s1, N1))).to(torch.float16)
    weights = torch.tensor(np.random.uniform(0, 0.01, (b, s1, N1))).to(torch.float16)
    actual_seq_lengths_query = torch.tensor(np.random.uniform(s1, s1, (b))).to(torch.int32)
    actual_seq_lengths_key = torch.tensor(np.random.uniform(s2, s2, (b))).to(torch.int32)
    to = lambda t: t.to(device)  # noqa: E731
    args = tuple(map(to, (query, key, weights, query_dequant_scale, key_dequant_scale)))
    kwargs = dict(actual_seq_lengths_query=to(actual_seq_lengths_query),
                  actual_seq_lengths_key=to(actual_seq_lengths_key), block_table=to(block_table),
                  layout_query="BSND", layout_key="PA_BSND", sparse_count=sparse_count,
                  sparse_mode=sparse_mode, cmp_ratio=cmp_ratio)
    return args, kwargs


def single_op(device, args, kwargs):
    """The doc's first example: metadata op, then the indexer, eagerly."""
    asq, ask = kwargs["actual_seq_lengths_query"], kwargs["actual_seq_lengths_key"]
    metadata = torch.ops.custom.npu_vllm_quant_lightning_indexer_metadata(
        actual_seq_lengths_query=asq, actual_seq_lengths_key=ask, num_heads_q=N1, num_heads_k=N2,
        head_dim=D, query_quant_mode=0, key_quant_mode=0, batch_size=asq.shape[0],
        max_seqlen_q=int(asq.max()), max_seqlen_k=int(ask.max()), layout_query="BSND",
        layout_key="PA_BSND", sparse_count=kwargs["sparse_count"], sparse_mode=kwargs["sparse_mode"],
        pre_tokens=INT64_MAX, next_tokens=INT64_MAX, cmp_ratio=kwargs["cmp_ratio"], device=str(device))
    return torch.ops.custom.npu_vllm_quant_lightning_indexer(
        *args, metadata=metadata, query_quant_mode=0, key_quant_mode=0, pre_tokens=INT64_MAX,
        next_tokens=INT64_MAX, **kwargs)


class QLINetwork(nn.Module):
    """The doc's second example: metadata computed inside the graph, then the indexer."""

    def __init__(self, max_seqlen_q, max_seqlen_k, device, cmp_ratio=1):
        super().__init__()
        self.max_seqlen_q, self.max_seqlen_k = max_seqlen_q, max_seqlen_k
        self.device_name, self.cmp_ratio = str(device), cmp_ratio

    def forward(self, query, key, weights, q_scale, k_scale, query_quant_mode, key_quant_mode,
                batch_size, num_heads_q, num_heads_k, head_dim,
                actual_seq_lengths_query=None, actual_seq_lengths_key=None,
                block_table=None, layout_query='BSND', layout_key='BSND',
                sparse_count=512, sparse_mode=3, pre_tokens=INT64_MAX,
                next_tokens=INT64_MAX, cmp_ratio=None, return_value=False):
        cmp_ratio = self.cmp_ratio if cmp_ratio is None else cmp_ratio
        metadata = torch.ops.custom.npu_vllm_quant_lightning_indexer_metadata(
            actual_seq_lengths_query=actual_seq_lengths_query,
            actual_seq_lengths_key=actual_seq_lengths_key,
            num_heads_q=num_heads_q, num_heads_k=num_heads_k, head_dim=head_dim,
            query_quant_mode=query_quant_mode, key_quant_mode=key_quant_mode,
            batch_size=batch_size, max_seqlen_q=self.max_seqlen_q, max_seqlen_k=self.max_seqlen_k,
            layout_query=layout_query, layout_key=layout_key, sparse_count=sparse_count,
            sparse_mode=sparse_mode, pre_tokens=INT64_MAX, next_tokens=INT64_MAX,
            cmp_ratio=cmp_ratio, device=self.device_name)
        sparse_indices, sparse_values = torch.ops.custom.npu_vllm_quant_lightning_indexer(
            query, key, weights, q_scale, k_scale,
            actual_seq_lengths_query=actual_seq_lengths_query,
            actual_seq_lengths_key=actual_seq_lengths_key, block_table=block_table,
            metadata=metadata, query_quant_mode=query_quant_mode, key_quant_mode=key_quant_mode,
            layout_query=layout_query, layout_key=layout_key, sparse_count=sparse_count,
            sparse_mode=sparse_mode, pre_tokens=pre_tokens, next_tokens=next_tokens,
            cmp_ratio=cmp_ratio, return_value=return_value)
        return sparse_indices


def network_call(model, args, kwargs):
    """Call QLINetwork the way the doc calls its compiled module."""
    b = args[0].shape[0]
    return model(*args, 0, 0, b, N1, N2, D,
                 actual_seq_lengths_query=kwargs["actual_seq_lengths_query"],
                 actual_seq_lengths_key=kwargs["actual_seq_lengths_key"],
                 block_table=kwargs["block_table"], layout_query="BSND", layout_key="PA_BSND",
                 sparse_count=kwargs["sparse_count"], sparse_mode=kwargs["sparse_mode"],
                 pre_tokens=INT64_MAX, next_tokens=INT64_MAX, cmp_ratio=kwargs["cmp_ratio"],
                 return_value=False)
