"""The NPU backend's plumbing, checked on the CPU: one name per argument in every layer.

torch schema (custom_ops/_schemas.py) -> torchair graph node (backends/npu/graph_nodes.py) ->
AscendC op definition (op_host/<op>_def.cpp) and its msopgen seed (op_host/custom_ops_npu.json)
-> aclnn call of the binding (custom_ops/csrc/npu/<op>.cpp). aclnn<Op>GetWorkspaceSize takes the
op's inputs, then its attributes, then its outputs, in definition order, so the binding's
argument list is checked against the definition too. The kernels themselves need an NPU: the
last test runs only there.
"""
import json
import re
from pathlib import Path

import pytest
import torch

import custom_ops  # noqa: F401
from custom_ops.backends.npu import graph_nodes

ROOT = Path(__file__).resolve().parents[1]
OPS = {  # torch op -> (AscendC op type, file stem)
    "npu_vllm_quant_lightning_indexer": ("VllmQuantLightningIndexer", "vllm_quant_lightning_indexer"),
    "npu_vllm_quant_lightning_indexer_metadata": ("VllmQuantLightningIndexerMetadata",
                                                  "vllm_quant_lightning_indexer_metadata"),
    "vtensor_append_": ("VtensorAppend", "vtensor_append"),
}
GRAPH_OPS = ["npu_vllm_quant_lightning_indexer", "npu_vllm_quant_lightning_indexer_metadata"]


def _unique(seq):
    return list(dict.fromkeys(seq))


def op_definition(stem):
    """(inputs, attrs, outputs) of op_host/<stem>_def.cpp, in definition order."""
    text = (ROOT / "op_host" / f"{stem}_def.cpp").read_text()
    shared = (ROOT / "op_host" / "li_op_def.h").read_text()
    selection = re.search(r"void AddSelectionAttrs\(OpDef &def\)\s*\{(.*?)\n\}", shared, re.S).group(1)
    text = text.replace("AddSelectionAttrs(*this);", selection)
    grab = lambda kind: _unique(re.findall(rf'\b{kind}\("(\w+)"\)', text))  # noqa: E731
    return grab("Input"), grab("Attr"), grab("Output")


def schema_args(op):
    return [a.name for a in getattr(torch.ops.custom, op).default._schema.arguments]


@pytest.mark.parametrize("op", OPS)
def test_definition_inputs_and_attrs_are_the_schema_arguments(op):
    inputs, attrs, _ = op_definition(OPS[op][1])
    binding_only = {"key_stride0", "key_scale_stride0", "aic_core_num", "cache_stride_b", "cache_stride_s"}
    torch_only = {"device"}  # picks the eager output device
    want = [a for a in schema_args(op) if a not in torch_only]
    assert [a for a in inputs + attrs if a not in binding_only] == want


@pytest.mark.parametrize("op", OPS)
def test_msopgen_seed_matches_definition(op):
    seed = {o["op"]: o for o in json.loads((ROOT / "op_host" / "custom_ops_npu.json").read_text())}
    op_type, stem = OPS[op]
    inputs, attrs, outputs = op_definition(stem)
    entry = seed[op_type]
    assert [d["name"] for d in entry["input_desc"]] == inputs
    assert [d["name"] for d in entry["attr"]] == attrs
    assert [d["name"] for d in entry["output_desc"]] == outputs


@pytest.mark.parametrize("op", GRAPH_OPS)
def test_graph_node_carries_every_input_and_attr_of_the_definition(op):
    op_type, stem = OPS[op]
    inputs, attrs, outputs = op_definition(stem)
    args = {a.name: (a.default_value if a.has_default_value() else f"<{a.name}>")
            for a in getattr(torch.ops.custom, op).default._schema.arguments}
    node = getattr(graph_nodes, op)(**args)
    assert node.op_type == op_type
    assert list(node.inputs) == inputs
    assert list(node.attrs) == attrs
    assert list(node.outputs) == outputs
    for name, value in args.items():  # every schema argument reaches the graph unchanged
        if name in node.inputs:
            assert node.inputs[name] == value, name
        elif name in node.attrs:
            assert node.attrs[name][1] == value, name


def test_graph_node_attr_kinds_follow_schema_types():
    kinds = {"int": "Int", "str": "Str", "bool": "Bool"}
    for op in GRAPH_OPS:
        schema = {a.name: str(a.type) for a in getattr(torch.ops.custom, op).default._schema.arguments}
        node = getattr(graph_nodes, op)(**{n: 0 for n in schema if n != "device"})
        for name, (kind, _) in node.attrs.items():
            if name in schema:
                assert kind == kinds[schema[name]], name


ACLNN_NAMES = {"lq_attr": "layout_query", "lk_attr": "layout_key", "rows": "states"}


@pytest.mark.parametrize("op", OPS)
def test_binding_calls_aclnn_with_definition_order(op):
    op_type, stem = OPS[op]
    inputs, attrs, outputs = op_definition(stem)
    text = (ROOT / "custom_ops" / "csrc" / "npu" / f"{stem}.cpp").read_text()
    call = re.search(rf"EXEC_NPU_CMD_EXT\(aclnn{op_type},(.*?)\);", text, re.S).group(1)
    args = [ACLNN_NAMES.get(a.strip(), a.strip()) for a in call.split(",")]
    # An in-place op's output is its input (cacheRef): aclnn lists it once.
    want = inputs + attrs + [o for o in outputs if o not in inputs]
    assert args == want


def test_import_without_torch_npu_registers_no_npu_kernels():
    pytest.importorskip("torch")
    try:
        import torch_npu  # noqa: F401
        pytest.skip("torch_npu is installed here")
    except ImportError:
        pass
    for op in OPS:
        assert not torch._C._dispatch_has_kernel_for_dispatch_key(f"custom::{op}", "PrivateUse1")


def _npu_available():
    try:
        import torch_npu  # noqa: F401
    except ImportError:
        return False
    return torch.npu.is_available()


@pytest.mark.skipif(not _npu_available(), reason="needs an Ascend NPU with torch_npu and the op package")
@pytest.mark.parametrize("layout", ["BSND", "TND"])
def test_npu_indexer_matches_golden_ascend_a3(layout):
    from custom_ops.testing import assert_indexer_close, make_indexer_inputs

    args, kw = make_indexer_inputs(q_lens=[4, 1, 3], k_lens=[9000, 300, 70000], layout=layout,
                                   block_size=128, return_value=True, device="npu")
    metadata = torch.ops.custom.npu_vllm_quant_lightning_indexer_metadata(
        actual_seq_lengths_query=kw["actual_seq_lengths_query"],
        actual_seq_lengths_key=kw["actual_seq_lengths_key"], num_heads_q=64, num_heads_k=1,
        head_dim=128, batch_size=3, max_seqlen_q=4, layout_query=layout, device="npu")
    indices, values = torch.ops.custom.npu_vllm_quant_lightning_indexer(*args, metadata=metadata, **kw)
    assert_indexer_close(indices, values, args, kw, rounding="ascend_a3")
