"""torchair converters: torch.compile(backend=torchair) turns the two indexer ops and the KV
append into their AscendC ops in the GE graph. Imported only where torch_npu and torchair import.
"""
import torch
import torch_npu  # noqa: F401  (torch.npu)
import torchair
from torchair._ge_concrete_graph.fx2ge_converter import register_fx_node_ge_converter
from torchair.ge import attr

from . import graph_nodes


def _emit(node: graph_nodes.GraphNode):
    attrs = {name: getattr(attr, kind)(value) for name, (kind, value) in node.attrs.items()}
    return torchair.ge.custom_op(node.op_type, inputs=node.inputs, attrs=attrs,
                                 outputs=list(node.outputs))


def _stream_cube_cores() -> int:
    """Cube cores the current stream may use (a stream limit can be below the platform's)."""
    limit = getattr(torch.npu, "get_stream_limit", None)
    if limit is None:
        return 0
    return int(limit(torch.npu.current_stream()).get("cube_core_num", 0) or 0)


@register_fx_node_ge_converter(torch.ops.custom.npu_vllm_quant_lightning_indexer.default)
def convert_npu_vllm_quant_lightning_indexer(*args, meta_outputs=None, **kwargs):
    return _emit(graph_nodes.npu_vllm_quant_lightning_indexer(*args, **kwargs))


@register_fx_node_ge_converter(torch.ops.custom.npu_vllm_quant_lightning_indexer_metadata.default)
def convert_npu_vllm_quant_lightning_indexer_metadata(*, meta_outputs=None, **kwargs):
    return _emit(graph_nodes.npu_vllm_quant_lightning_indexer_metadata(
        aic_core_num=_stream_cube_cores(), **kwargs))


# torchair's convention for an op with a `Tensor(a!)` argument (Ascend/torchair,
# python/torchair/_ge_concrete_graph/auto_functionalized_v2.py, and the in-place sample of
# docs/zh/custom_op_graph/in_place_op_cases.md): functionalization wraps the call in
# auto_functionalized_v2; torchair hands this converter a copy of the cache (TensorMove), by
# keyword, then takes the updated cache from the output of the graph's last op whose name is the
# modified input's ("cache", VtensorAppend's ref output) and lets GE remove the copy. So the
# converter adds exactly that one op, and returns what the schema returns: nothing.
@register_fx_node_ge_converter(torch.ops.custom.vtensor_append_.default)
def convert_vtensor_append_(cache, states, positions, meta_outputs=None):
    _emit(graph_nodes.vtensor_append_(cache, states, positions))
