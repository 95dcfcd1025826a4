"""Registration: schemas, fakes and dispatch pass torch.library.opcheck; importing twice is harmless."""
import importlib

import pytest
import torch

import custom_ops
from custom_ops import _schemas
from custom_ops.testing import make_indexer_inputs


def test_import_twice_is_harmless():
    importlib.reload(_schemas)
    importlib.reload(custom_ops)
    assert hasattr(torch.ops.custom, "npu_vllm_quant_lightning_indexer")


def test_every_schema_is_registered():
    for name, schema in _schemas.SCHEMAS.items():
        op = getattr(torch.ops.custom, name).default
        assert str(op._schema).replace("custom::", "") == torch._C.parse_schema(schema).__str__(), name


@pytest.mark.parametrize("layout", ["BSND", "TND"])
@pytest.mark.parametrize("return_value", [False, True])
def test_opcheck_indexer(layout, return_value):
    args, kwargs = make_indexer_inputs(q_lens=[3, 1], k_lens=[200, 40], layout=layout,
                                       block_size=16, sparse_count=32, return_value=return_value)
    torch.library.opcheck(torch.ops.custom.npu_vllm_quant_lightning_indexer, args, kwargs)


@pytest.mark.parametrize("layout", ["BSND", "TND"])
def test_opcheck_metadata(layout):
    lengths_q = torch.tensor([2, 5] if layout == "BSND" else [2, 7], dtype=torch.int32)
    kwargs = dict(actual_seq_lengths_query=lengths_q,
                  actual_seq_lengths_key=torch.tensor([300, 9000], dtype=torch.int32),
                  num_heads_q=64, num_heads_k=1, head_dim=128, max_seqlen_q=5,
                  layout_query=layout, device="cpu")
    torch.library.opcheck(torch.ops.custom.npu_vllm_quant_lightning_indexer_metadata, (), kwargs)
