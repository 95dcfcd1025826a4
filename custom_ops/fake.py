"""Fake (meta) implementations of every op: shapes, dtypes and devices only, never data.

torch.compile and torchair trace these; each allocates contiguous outputs like the real op.
"""
import torch

from ._checks import check_indexer, check_metadata_args, indexer_arguments, metadata_arguments
from .metadata import METADATA_LEN


@torch.library.register_fake("custom::npu_vllm_quant_lightning_indexer")
def npu_vllm_quant_lightning_indexer(query, key, weights, query_dequant_scale, key_dequant_scale,
                                     **kwargs):
    kw = indexer_arguments(kwargs)
    # shapes, dtypes, devices and attributes, never values: a traced bad call fails as in eager
    # (and a call that mixes meta tensors with others, which dispatches here, fails too)
    check_indexer(query, key, weights, query_dequant_scale, key_dequant_scale, **kw)
    # [B, S1, N2, K] for BSND, [T, N2, K] for TND
    shape = (*query.shape[:-2], key.shape[2], kw["sparse_count"])
    indices = query.new_empty(shape, dtype=torch.int32)
    values = query.new_empty(shape if kw["return_value"] else (0,), dtype=torch.float32)
    return indices, values


@torch.library.register_fake("custom::npu_vllm_quant_lightning_indexer_metadata")
def npu_vllm_quant_lightning_indexer_metadata(**kwargs):
    kw = metadata_arguments(kwargs)
    check_metadata_args(**kw)  # shapes and attributes only: a traced bad call fails as in eager
    device = torch.device(kw["device"])
    if device.type == "cpu":  # the CPU backend computes it on "cpu", whatever index was named
        device = torch.device("cpu")
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


# Each fake runs its op's checks (shapes, dtypes, devices, strides: custom_ops/vtensor/checks.py),
# so a traced bad call fails as in eager, and a call mixing meta tensors with others, which
# dispatches here, raises instead of returning an uninitialised tensor.
@torch.library.register_fake("custom::vtensor_reserve_one_token")
def vtensor_reserve_one_token(key_cache, key_states):
    from .vtensor.checks import check_reserve_one_token_args
    check_reserve_one_token_args(key_cache, key_states)
    return _vtensor_appended(key_cache, key_states)  # [B, S + 1, H, D]


@torch.library.register_fake("custom::vtensor_append")
def vtensor_append(cache, states):
    from .vtensor.checks import check_functional_args
    check_functional_args(cache, states, "vtensor_append")
    return _vtensor_appended(cache, states)  # [B, S + T, H, D]


@torch.library.register_fake("custom::vtensor_append_")
def vtensor_append_(cache, states, positions):
    from .vtensor.checks import check_inplace_args
    check_inplace_args(cache, states, positions)
    return None
# --- vtensor (end) ---
