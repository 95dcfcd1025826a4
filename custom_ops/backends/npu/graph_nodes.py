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

from ..._checks import indexer_arguments, metadata_arguments


@dataclasses.dataclass(frozen=True)
class GraphNode:
    op_type: str
    inputs: dict  # name -> graph tensor or None
    attrs: dict  # name -> (kind, value), kind in {"Int", "Str", "Bool"}
    outputs: tuple


def _selection_attrs(kw: dict) -> dict:
    return {name: (kind, kw[name]) for name, kind in (
        ("layout_query", "Str"), ("layout_key", "Str"), ("sparse_count", "Int"),
        ("sparse_mode", "Int"), ("pre_tokens", "Int"), ("next_tokens", "Int"),
        ("cmp_ratio", "Int"))}


def npu_vllm_quant_lightning_indexer(query, key, weights, query_dequant_scale, key_dequant_scale,
                                     **kwargs) -> GraphNode:
    """VllmQuantLightningIndexer. Graph tensors are dense, so the key strides are 0 (contiguous)."""
    kw = indexer_arguments(kwargs)
    inputs = {
        "query": query, "key": key, "weights": weights,
        "query_dequant_scale": query_dequant_scale, "key_dequant_scale": key_dequant_scale,
        **{name: kw[name] for name in ("actual_seq_lengths_query", "actual_seq_lengths_key",
                                       "block_table", "metadata")},
    }
    attrs = {name: ("Int", kw[name]) for name in ("query_quant_mode", "key_quant_mode")}
    attrs.update(_selection_attrs(kw))
    attrs.update({"return_value": ("Bool", kw["return_value"]), "key_stride0": ("Int", 0),
                  "key_scale_stride0": ("Int", 0)})
    return GraphNode("VllmQuantLightningIndexer", inputs, attrs, ("sparse_indices", "sparse_values"))


def npu_vllm_quant_lightning_indexer_metadata(*, aic_core_num=0, **kwargs) -> GraphNode:
    """VllmQuantLightningIndexerMetadata. `device` places the eager output and is no attribute;
    aic_core_num is the cube-core count of the stream the graph runs on (0: the platform's)."""
    kw = metadata_arguments(kwargs)
    inputs = {name: kw[name] for name in ("actual_seq_lengths_query", "actual_seq_lengths_key")}
    attrs = {name: ("Int", kw[name]) for name in (
        "num_heads_q", "num_heads_k", "head_dim", "query_quant_mode", "key_quant_mode",
        "batch_size", "max_seqlen_q", "max_seqlen_k")}
    attrs.update(_selection_attrs(kw))
    attrs["aic_core_num"] = ("Int", aic_core_num)
    return GraphNode("VllmQuantLightningIndexerMetadata", inputs, attrs, ("metadata",))


def vtensor_append_(cache, states, positions) -> GraphNode:
    """VtensorAppend, in place: output "cache" is input "cache". The view strides are 0 because GE
    tensors are dense and the tiling reads 0 as the dense stride of that axis. No `limits`: a GE
    graph's cache is an ordinary tensor (the eager binding passes a virtual cache's limits)."""
    inputs = {"cache": cache, "states": states, "positions": positions, "limits": None}
    attrs = {"cache_stride_b": ("Int", 0), "cache_stride_s": ("Int", 0)}
    return GraphNode("VtensorAppend", inputs, attrs, ("cache",))
