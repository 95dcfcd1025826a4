"""The NPU backend's plumbing, checked on the CPU: one name per argument in every layer.

torch schema (custom_ops/_schemas.py) -> torchair graph node (backends/npu/graph_nodes.py) ->
AscendC op definition (op_host/<op>_def.cpp) and its msopgen seed (op_host/custom_ops_npu.json)
-> aclnn call of the binding (custom_ops/csrc/npu/<op>.cpp). aclnn<Op>GetWorkspaceSize takes the
op's inputs, then its attributes, then its outputs, in definition order, so the binding's
argument list is checked against the definition too. Each converter of converters.py is run on
stand-ins for the few torchair names it uses, to check what it hands torchair. The kernels need an NPU:
the last test runs only there.
"""
import importlib.util
import json
import re
import sys
import types
from pathlib import Path

import pytest
import torch

import custom_ops  # noqa: F401
from custom_ops.backends import npu
from custom_ops.backends.npu import graph_nodes

ROOT = Path(__file__).resolve().parents[1]
OPS = {  # torch op -> (AscendC op type, file stem)
    "npu_vllm_quant_lightning_indexer": ("VllmQuantLightningIndexer", "vllm_quant_lightning_indexer"),
    "npu_vllm_quant_lightning_indexer_metadata": ("VllmQuantLightningIndexerMetadata",
                                                  "vllm_quant_lightning_indexer_metadata"),
    "vtensor_append_": ("VtensorAppend", "vtensor_append"),
}
GRAPH_OPS = list(OPS)


def _unique(seq):
    return list(dict.fromkeys(seq))


def _definition_text(stem):
    text = (ROOT / "op_host" / f"{stem}_def.cpp").read_text()
    shared = (ROOT / "op_host" / "li_op_def.h").read_text()
    selection = re.search(r"void AddSelectionAttrs\(OpDef &def\)\s*\{(.*?)\n\}", shared, re.S).group(1)
    return text.replace("AddSelectionAttrs(*this);", selection)


def op_definition(stem):
    """(inputs, attrs, outputs) of op_host/<stem>_def.cpp, in definition order."""
    text = _definition_text(stem)
    grab = lambda kind: _unique(re.findall(rf'\b{kind}\("(\w+)"\)', text))  # noqa: E731
    return grab("Input"), grab("Attr"), grab("Output")


DEF_KINDS = {"Int": "Int", "String": "Str", "Bool": "Bool"}  # OpDef attr type -> torchair ge.attr


def definition_attrs(stem):
    """{attr: (torchair kind, default or None if required)} of op_host/<stem>_def.cpp."""
    found = re.findall(r'Attr\("(\w+)"\)\.AttrType\((\w+)\)\.(\w+)\(([^)]*)\)', _definition_text(stem))
    parse = {"Int": int, "String": lambda v: v.strip('"'), "Bool": lambda v: v == "true"}
    return {name: (DEF_KINDS[kind], parse[kind](value) if presence == "OPTIONAL" else None)
            for name, presence, kind, value in found}


def schema_args(op):
    return [a.name for a in getattr(torch.ops.custom, op).default._schema.arguments]


@pytest.mark.parametrize("op", OPS)
def test_definition_inputs_and_attrs_are_the_schema_arguments(op):
    inputs, attrs, _ = op_definition(OPS[op][1])
    binding_only = {"key_stride0", "key_scale_stride0", "aic_core_num", "cache_stride_b", "cache_stride_s",
                    "limits"}
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


def _not_the_default(arg):
    """A value the graph node cannot produce by falling back on the schema's default."""
    if not arg.has_default_value() or arg.default_value is None:
        return f"<{arg.name}>"
    default = arg.default_value
    if isinstance(default, bool):
        return not default
    if isinstance(default, int):
        return default - 5 if default > 2**62 else default + 5
    return f"{default}-not-default"


@pytest.mark.parametrize("op", GRAPH_OPS)
def test_graph_node_carries_every_input_and_attr_of_the_definition(op):
    op_type, stem = OPS[op]
    inputs, attrs, outputs = op_definition(stem)
    args = {a.name: _not_the_default(a) for a in getattr(torch.ops.custom, op).default._schema.arguments}
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


@pytest.mark.parametrize("op", GRAPH_OPS)
def test_graph_node_attr_kinds_and_binding_defaults_follow_definition(op):
    """Kinds as the op declares them; attributes the torch call does not carry (view strides, core
    count) keep the definition's default, which means "dense" / "the platform's"."""
    stem = OPS[op][1]
    declared = definition_attrs(stem)
    assert list(declared) == op_definition(stem)[1]
    schema = set(schema_args(op))
    node = getattr(graph_nodes, op)(**{n: 0 for n in schema if n != "device"})
    for name, (kind, value) in node.attrs.items():
        assert kind == declared[name][0], name
        if name not in schema:
            assert value == declared[name][1], name


@pytest.mark.parametrize("op", GRAPH_OPS)
def test_graph_node_outputs_every_modified_input_under_its_name(op):
    """torchair takes a mutated argument's new value from the GE output of the same name."""
    schema = getattr(torch.ops.custom, op).default._schema
    modified = [a.name for a in schema.arguments if a.alias_info is not None and a.alias_info.is_write]
    node = getattr(graph_nodes, op)(**{a.name: f"<{a.name}>" for a in schema.arguments if a.name != "device"})
    assert [o for o in node.outputs if o in node.inputs] == modified
    assert len(node.outputs) == len(modified) + len(schema.returns)


def test_graph_node_attr_kinds_follow_schema_types():
    kinds = {"int": "Int", "str": "Str", "bool": "Bool"}
    for op in GRAPH_OPS:
        schema = {a.name: str(a.type) for a in getattr(torch.ops.custom, op).default._schema.arguments}
        node = getattr(graph_nodes, op)(**{n: 0 for n in schema if n != "device"})
        for name, (kind, _) in node.attrs.items():
            if name in schema:
                assert kind == kinds[schema[name]], name


def _converters_on_stand_ins(monkeypatch):
    """Run converters.py against stand-ins for the torchair names it uses (torchair is not installed
    here); returns {torch op: converter} and the list of custom_op calls."""
    registered, calls = {}, []
    fx2ge = types.ModuleType("torchair._ge_concrete_graph.fx2ge_converter")
    fx2ge.register_fx_node_ge_converter = lambda target: lambda fn: registered.setdefault(target, fn)
    ge = types.ModuleType("torchair.ge")
    ge.attr = types.SimpleNamespace(Int=lambda v: ("Int", v), Str=lambda v: ("Str", v), Bool=lambda v: ("Bool", v))
    ge.custom_op = lambda op_type, **kw: calls.append((op_type, kw)) or f"<{op_type} outputs>"
    torchair = types.ModuleType("torchair")
    torchair.ge = ge
    for name, module in {"torch_npu": types.ModuleType("torch_npu"), "torchair": torchair, "torchair.ge": ge,
                         "torchair._ge_concrete_graph": types.ModuleType("torchair._ge_concrete_graph"),
                         "torchair._ge_concrete_graph.fx2ge_converter": fx2ge}.items():
        monkeypatch.setitem(sys.modules, name, module)
    spec = importlib.util.spec_from_file_location("custom_ops.backends.npu.converters",
                                                  ROOT / "custom_ops" / "backends" / "npu" / "converters.py")
    spec.loader.exec_module(importlib.util.module_from_spec(spec))
    return registered, calls


def test_vtensor_append_converter_as_torchair_calls_it(monkeypatch):
    """torchair's auto_functionalized_v2 handling calls the in-place op's converter by keyword,
    without meta_outputs, and reads the new cache from the last op's output named "cache": the
    converter adds that one VtensorAppend node and, like the schema, returns nothing."""
    registered, calls = _converters_on_stand_ins(monkeypatch)
    convert = registered[torch.ops.custom.vtensor_append_.default]
    args = {"cache": "<cache>", "states": "<states>", "positions": "<positions>"}
    assert convert(**args) is None
    node = graph_nodes.vtensor_append_(**args)
    assert calls == [("VtensorAppend", {"inputs": node.inputs, "attrs": node.attrs, "outputs": ["cache"]})]


@pytest.mark.parametrize("op", ["npu_vllm_quant_lightning_indexer", "npu_vllm_quant_lightning_indexer_metadata"])
def test_indexer_converters_emit_their_graph_node(monkeypatch, op):
    """Each converter hands torchair exactly its graph node: every schema argument, none defaulted."""
    monkeypatch.setattr(torch, "npu", types.SimpleNamespace(
        get_stream_limit=lambda stream: {"cube_core_num": 20}, current_stream=lambda: None), raising=False)
    registered, calls = _converters_on_stand_ins(monkeypatch)
    schema = getattr(torch.ops.custom, op).default._schema
    args = {a.name: _not_the_default(a) for a in schema.arguments}
    positional = [args.pop(a.name) for a in schema.arguments if not a.kwarg_only]
    registered[getattr(torch.ops.custom, op).default](*positional, meta_outputs=None, **args)
    extra = {"aic_core_num": 20} if op.endswith("metadata") else {}
    node = getattr(graph_nodes, op)(*positional, **args, **extra)
    assert calls == [(node.op_type, {"inputs": node.inputs, "attrs": node.attrs,
                                     "outputs": list(node.outputs)})]


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


@pytest.mark.skipif(not npu.available(), reason="needs an Ascend NPU with torch_npu and the op package")
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
