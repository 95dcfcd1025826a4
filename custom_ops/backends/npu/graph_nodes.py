"""What the torchair converters put in a GE graph, as plain data (no torchair import).

Each function maps one op call, with the torch schema's arguments, to the AscendC op of
op_host/<op>_def.cpp: its type, its inputs by name in definition order (None for an absent
optional input), its attributes as (kind, value) in definition order, and its outputs. The
converters (converters.py) only wrap these in `torchair.ge.custom_op`; the CPU tests check them
against the op definitions and the schemas. An in-place op's node has an output named like
each input it modifies: that is how the op definition declares the modification, and how torchair
finds the updated tensor (converters.py).
"""
from __future__ import annotations

import dataclasses

INT64_MAX = 2**63 - 1


@dataclasses.dataclass(frozen=True)
class GraphNode:
    op_type: str
    inputs: dict  # name -> graph tensor or None
    attrs: dict  # name -> (kind, value), kind in {"Int", "Str", "Bool"}
    outputs: tuple


def _selection_attrs(layout_query, layout_key, sparse_count, sparse_mode, pre_tokens,
                     next_tokens, cmp_ratio):
    return {
        "layout_query": ("Str", layout_query), "layout_key": ("Str", layout_key),
        "sparse_count": ("Int", sparse_count), "sparse_mode": ("Int", sparse_mode),
        "pre_tokens": ("Int", pre_tokens), "next_tokens": ("Int", next_tokens),
        "cmp_ratio": ("Int", cmp_ratio),
    }


def npu_vllm_quant_lightning_indexer(
        query, key, weights, query_dequant_scale, key_dequant_scale, *,
        actual_seq_lengths_query=None, actual_seq_lengths_key=None, block_table=None,
        metadata=None, query_quant_mode=0, key_quant_mode=0, layout_query="BSND",
        layout_key="PA_BSND", sparse_count=2048, sparse_mode=3, pre_tokens=INT64_MAX,
        next_tokens=INT64_MAX, cmp_ratio=1, return_value=False) -> GraphNode:
    """VllmQuantLightningIndexer. Graph tensors are dense, so the key strides are 0 (contiguous)."""
    inputs = {
        "query": query, "key": key, "weights": weights,
        "query_dequant_scale": query_dequant_scale, "key_dequant_scale": key_dequant_scale,
        "actual_seq_lengths_query": actual_seq_lengths_query,
        "actual_seq_lengths_key": actual_seq_lengths_key, "block_table": block_table,
        "metadata": metadata,
    }
    attrs = {"query_quant_mode": ("Int", query_quant_mode), "key_quant_mode": ("Int", key_quant_mode)}
    attrs.update(_selection_attrs(layout_query, layout_key, sparse_count, sparse_mode, pre_tokens,
                                  next_tokens, cmp_ratio))
    attrs.update({"return_value": ("Bool", return_value), "key_stride0": ("Int", 0),
                  "key_scale_stride0": ("Int", 0)})
    return GraphNode("VllmQuantLightningIndexer", inputs, attrs, ("sparse_indices", "sparse_values"))


def npu_vllm_quant_lightning_indexer_metadata(
        *, actual_seq_lengths_query, actual_seq_lengths_key, num_heads_q, num_heads_k, head_dim,
        query_quant_mode=0, key_quant_mode=0, batch_size=0, max_seqlen_q=0, max_seqlen_k=0,
        layout_query="BSND", layout_key="PA_BSND", sparse_count=2048, sparse_mode=3,
        pre_tokens=INT64_MAX, next_tokens=INT64_MAX, cmp_ratio=1, device="npu",
        aic_core_num=0) -> GraphNode:
    """VllmQuantLightningIndexerMetadata. `device` places the eager output and is no attribute;
    aic_core_num is the cube-core count of the stream the graph runs on (0: the platform's)."""
    inputs = {"actual_seq_lengths_query": actual_seq_lengths_query,
              "actual_seq_lengths_key": actual_seq_lengths_key}
    attrs = {
        "num_heads_q": ("Int", num_heads_q), "num_heads_k": ("Int", num_heads_k),
        "head_dim": ("Int", head_dim), "query_quant_mode": ("Int", query_quant_mode),
        "key_quant_mode": ("Int", key_quant_mode), "batch_size": ("Int", batch_size),
        "max_seqlen_q": ("Int", max_seqlen_q), "max_seqlen_k": ("Int", max_seqlen_k),
    }
    attrs.update(_selection_attrs(layout_query, layout_key, sparse_count, sparse_mode, pre_tokens,
                                  next_tokens, cmp_ratio))
    attrs["aic_core_num"] = ("Int", aic_core_num)
    return GraphNode("VllmQuantLightningIndexerMetadata", inputs, attrs, ("metadata",))


def vtensor_append_(cache, states, positions) -> GraphNode:
    """VtensorAppend, in place: output "cache" is input "cache". The view strides are 0 because GE
    tensors are dense and the tiling reads 0 as the dense stride of that axis."""
    inputs = {"cache": cache, "states": states, "positions": positions}
    attrs = {"cache_stride_b": ("Int", 0), "cache_stride_s": ("Int", 0)}
    return GraphNode("VtensorAppend", inputs, attrs, ("cache",))
