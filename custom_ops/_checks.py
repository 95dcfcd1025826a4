"""Argument validation shared by every backend (SPEC §4).

Each check runs before any kernel and raises ValueError (TypeError for dtypes) whose message names
the argument, the value received and the rule. Shape, dtype and attribute checks never read tensor
data; `check_length_values` does (the CPU backend calls it; device backends clamp in the kernel
instead of syncing).
"""
from __future__ import annotations

import dataclasses
import functools

import torch

from . import _schemas  # noqa: F401  (the schemas that keyword defaults come from)

NUM_HEADS_Q, NUM_HEADS_K, HEAD_DIM = 64, 1, 128
MAX_SPARSE_COUNT = 2048
MAX_BLOCK_SIZE = 1024
INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1
QK_DTYPES = (torch.int8, torch.float8_e4m3fn)
SCALE_DTYPES = (torch.float16, torch.float32)


@dataclasses.dataclass(frozen=True)
class IndexerProblem:
    """Static facts of one indexer call, derived from shapes and attributes only."""

    layout_query: str
    batch: int
    max_s1: int  # S1 (BSND) or T (TND): the query rows of the output
    num_blocks: int
    block_size: int
    max_blocks_per_seq: int
    sparse_count: int
    sparse_mode: int
    cmp_ratio: int
    return_value: bool


@functools.cache
def _keywords(op_name: str) -> tuple:
    """(name, has a default, default) of each keyword-only argument of torch.ops.custom.<op_name>,
    read from its registered schema once (reading the schema costs ~20 µs per call)."""
    return tuple((a.name, a.has_default_value(), a.default_value)
                 for a in getattr(torch.ops.custom, op_name).default._schema.arguments
                 if a.kwarg_only)


def _keyword_arguments(op_name: str, kwargs: dict, **own) -> dict:
    """Every keyword-only argument of torch.ops.custom.<op_name>: the call's, else `own`, else the
    registered schema's default. The dispatcher hands a Python kernel only the keywords whose
    values differ from the schema's defaults (it drops the others, even when the caller wrote
    them), so each kernel would otherwise restate the defaults; the schema is their one source."""
    out = {}
    for name, has_default, default in _keywords(op_name):
        if name in kwargs:
            out[name] = kwargs[name]
        elif name in own:
            out[name] = own[name]
        elif has_default:
            out[name] = default
        else:
            raise TypeError(f"{op_name}() missing required keyword argument {name!r}")
    unknown = sorted(set(kwargs) - set(out))
    if unknown:
        raise TypeError(f"{op_name}() got unexpected keyword arguments {unknown}")
    return out


def indexer_arguments(kwargs: dict) -> dict:
    """The indexer's keyword arguments with the schema's defaults filled in (SPEC §1.1)."""
    return _keyword_arguments("npu_vllm_quant_lightning_indexer", kwargs)


def metadata_arguments(kwargs: dict) -> dict:
    """The metadata op's keyword arguments with the schema's defaults filled in (SPEC §2), except
    `device`: a kernel that gets none computes where the key lengths are. The dispatcher chose the
    backend by that device, and drops device="npu" (the schema default) even when written, so
    the kernel cannot tell the two apart; the typed wrapper `ops.py` checks an explicit device
    before dispatch (`check_metadata_device`)."""
    ask = kwargs.get("actual_seq_lengths_key")
    own = {"device": str(ask.device)} if isinstance(ask, torch.Tensor) else {}
    return _keyword_arguments("npu_vllm_quant_lightning_indexer_metadata", kwargs, **own)


def _fail(name, value, rule, exc=ValueError):
    raise exc(f"{name} {rule}, got {value}")


def _check_dtype(name, t, allowed):
    if t.dtype not in allowed:
        _fail(name, t.dtype, "must have dtype " + " or ".join(str(d) for d in allowed), TypeError)


def _check_shape(name, t, shape):
    if tuple(t.shape) != tuple(shape):
        _fail(name, list(t.shape), f"must have shape {list(shape)}")


def _dense_inside_block(t) -> bool:
    """Whether one block of `t` (every axis after the first) is contiguous; an axis of size 1
    may carry any stride, as torch's own contiguity allows."""
    want = 1
    for size, stride in reversed(list(zip(t.shape[1:], t.stride()[1:]))):
        if size != 1 and stride != want:
            return False
        want *= size
    return True


def _check_lengths_tensor(name, t, sizes, device):
    if t.dim() != 1 or t.shape[0] not in sizes:
        _fail(name, list(t.shape), f"must be 1-D with {' or '.join(map(str, sizes))} elements")
    _check_dtype(name, t, (torch.int32,))
    if t.device != device:
        _fail(name, t.device, f"must be on the query's device {device}")


def check_attributes(*, query_quant_mode, key_quant_mode, layout_query, layout_key, sparse_count,
                     sparse_mode, pre_tokens, next_tokens, cmp_ratio):
    if layout_query not in ("BSND", "TND"):
        _fail("layout_query", repr(layout_query), "must be 'BSND' or 'TND'")
    if layout_key != "PA_BSND":
        _fail("layout_key", repr(layout_key), "must be 'PA_BSND'")
    for name, mode in (("query_quant_mode", query_quant_mode), ("key_quant_mode", key_quant_mode)):
        if mode != 0:
            _fail(name, mode, "must be 0 (per-token-head quantization)")
    if not 1 <= sparse_count <= MAX_SPARSE_COUNT:
        _fail("sparse_count", sparse_count, f"must be in [1, {MAX_SPARSE_COUNT}]")
    if sparse_mode not in (0, 3):
        _fail("sparse_mode", sparse_mode, "must be 0 (no mask) or 3 (right-down causal)")
    for name, tokens in (("pre_tokens", pre_tokens), ("next_tokens", next_tokens)):
        if tokens != INT64_MAX:
            _fail(name, tokens, f"must be the default {INT64_MAX}")
    if not (1 <= cmp_ratio <= 128 and cmp_ratio & (cmp_ratio - 1) == 0):
        _fail("cmp_ratio", cmp_ratio, "must be a power of two in [1, 128]")


def check_indexer(query, key, weights, query_dequant_scale, key_dequant_scale, *,
                  actual_seq_lengths_query, actual_seq_lengths_key, block_table, metadata,
                  query_quant_mode, key_quant_mode, layout_query, layout_key, sparse_count,
                  sparse_mode, pre_tokens, next_tokens, cmp_ratio, return_value) -> IndexerProblem:
    """Check every shape, dtype, device and attribute rule of SPEC §1.1; return the static facts."""
    check_attributes(query_quant_mode=query_quant_mode, key_quant_mode=key_quant_mode,
                     layout_query=layout_query, layout_key=layout_key, sparse_count=sparse_count,
                     sparse_mode=sparse_mode, pre_tokens=pre_tokens, next_tokens=next_tokens,
                     cmp_ratio=cmp_ratio)
    _check_dtype("query", query, QK_DTYPES)
    if key.dtype != query.dtype:
        _fail("key", key.dtype, f"must have the query's dtype {query.dtype}", TypeError)
    _check_dtype("weights", weights, SCALE_DTYPES)
    _check_dtype("query_dequant_scale", query_dequant_scale, SCALE_DTYPES)
    if key_dequant_scale.dtype != query_dequant_scale.dtype:
        _fail("key_dequant_scale", key_dequant_scale.dtype,
              f"must have query_dequant_scale's dtype {query_dequant_scale.dtype}", TypeError)

    q_dims = 4 if layout_query == "BSND" else 3
    if query.dim() != q_dims:
        _fail("query", list(query.shape),
              f"must be {'[B, S1, N1, D]' if q_dims == 4 else '[T, N1, D]'} for {layout_query}")
    if query.shape[-2] != NUM_HEADS_Q:
        _fail("query", f"N1={query.shape[-2]}", f"must have N1 = {NUM_HEADS_Q} heads")
    if query.shape[-1] != HEAD_DIM:
        _fail("query", f"D={query.shape[-1]}", f"must have D = {HEAD_DIM}")
    if key.dim() != 4:
        _fail("key", list(key.shape), "must be [num_blocks, block_size, N2, D] for PA_BSND")
    num_blocks, block_size, n2, d = key.shape
    if n2 != NUM_HEADS_K:
        _fail("key", f"N2={n2}", f"must have N2 = {NUM_HEADS_K} head")
    if d != HEAD_DIM:
        _fail("key", f"D={d}", f"must have the query's D = {HEAD_DIM}")
    if block_size % 16 or not 16 <= block_size <= MAX_BLOCK_SIZE:
        _fail("key", f"block_size={block_size}",
              f"must have a block_size that is a multiple of 16 in [16, {MAX_BLOCK_SIZE}]")
    if not _dense_inside_block(key):
        _fail("key", f"strides {key.stride()}",
              "must be contiguous inside a block (only the block axis may be strided)")
    _check_shape("weights", weights, query.shape[:-1])
    _check_shape("query_dequant_scale", query_dequant_scale, query.shape[:-1])
    _check_shape("key_dequant_scale", key_dequant_scale, key.shape[:-1])
    if not _dense_inside_block(key_dequant_scale):
        _fail("key_dequant_scale", f"strides {key_dequant_scale.stride()}", "must be contiguous inside a block")
    device = query.device
    for name, t in (("key", key), ("weights", weights), ("query_dequant_scale", query_dequant_scale),
                    ("key_dequant_scale", key_dequant_scale)):
        if t.device != device:
            _fail(name, t.device, f"must be on the query's device {device}")

    if actual_seq_lengths_key is None:
        _fail("actual_seq_lengths_key", None, "is required for layout_key 'PA_BSND'")
    if layout_query == "BSND":
        batch = query.shape[0]
        _check_lengths_tensor("actual_seq_lengths_key", actual_seq_lengths_key, (batch,), device)
        if actual_seq_lengths_query is not None:
            _check_lengths_tensor("actual_seq_lengths_query", actual_seq_lengths_query, (batch,), device)
    else:
        if actual_seq_lengths_key.dim() != 1:
            _fail("actual_seq_lengths_key", list(actual_seq_lengths_key.shape), "must be 1-D [B]")
        batch = actual_seq_lengths_key.shape[0]
        _check_lengths_tensor("actual_seq_lengths_key", actual_seq_lengths_key, (batch,), device)
        if actual_seq_lengths_query is None:
            _fail("actual_seq_lengths_query", None, "is required for layout_query 'TND' (cumulative lengths)")
        _check_lengths_tensor("actual_seq_lengths_query", actual_seq_lengths_query, (batch, batch + 1), device)
    if block_table is None:
        _fail("block_table", None, "is required for layout_key 'PA_BSND'")
    if block_table.dim() != 2 or block_table.shape[0] != batch:
        _fail("block_table", list(block_table.shape), f"must be 2-D [B={batch}, max_blocks_per_seq]")
    _check_dtype("block_table", block_table, (torch.int32,))
    if block_table.device != device:
        _fail("block_table", block_table.device, f"must be on the query's device {device}")
    if metadata is not None:
        if metadata.dtype != torch.int32 or metadata.dim() != 1 or metadata.shape[0] != 1024:
            _fail("metadata", f"{metadata.dtype} {list(metadata.shape)}", "must be an int32 tensor of shape [1024]")
        if metadata.device != device:
            _fail("metadata", metadata.device, f"must be on the query's device {device}")
    return IndexerProblem(layout_query, batch, query.shape[1] if q_dims == 4 else query.shape[0],
                          num_blocks, block_size, block_table.shape[1], sparse_count, sparse_mode,
                          cmp_ratio, return_value)


def check_length_values(p: IndexerProblem, actual_seq_lengths_query, actual_seq_lengths_key,
                        block_table) -> None:
    """Data-dependent rules (reads the tensors: the CPU backend, and eager CUDA calls given
    metadata, whose host check syncs anyway; otherwise device backends clamp in the kernels)."""
    ask = actual_seq_lengths_key.cpu()
    if (ask < 0).any():
        _fail("actual_seq_lengths_key", ask.tolist(), "must be non-negative")
    capacity = p.max_blocks_per_seq * p.block_size
    s2c = torch.div(ask, p.cmp_ratio, rounding_mode="floor")
    if (s2c > capacity).any():
        _fail("actual_seq_lengths_key", ask.tolist(),
              f"must fit the block table: S2 / cmp_ratio <= max_blocks_per_seq * block_size = {capacity}")
    if actual_seq_lengths_query is not None:
        asq = actual_seq_lengths_query.cpu()
        if (asq < 0).any():
            _fail("actual_seq_lengths_query", asq.tolist(), "must be non-negative")
        if p.layout_query == "BSND" and (asq > p.max_s1).any():
            _fail("actual_seq_lengths_query", asq.tolist(), f"must be <= S1 = {p.max_s1}")
        if p.layout_query == "TND":
            if (asq[1:] < asq[:-1]).any():
                _fail("actual_seq_lengths_query", asq.tolist(), "must be non-decreasing (cumulative)")
            if asq.numel() and asq[-1] > p.max_s1:
                _fail("actual_seq_lengths_query", asq.tolist(), f"must end at most at T = {p.max_s1}")
            if asq.numel() == p.batch + 1 and asq[0] != 0:
                _fail("actual_seq_lengths_query", asq.tolist(), "with B+1 elements must start at 0")
    used = -(-s2c // p.block_size)  # blocks each batch reads
    cols = torch.arange(p.max_blocks_per_seq)
    bt = block_table.cpu()
    live = bt[cols[None, :] < used[:, None]]
    if live.numel() and ((live < 0) | (live >= p.num_blocks)).any():
        bad = live[(live < 0) | (live >= p.num_blocks)][0].item()
        _fail("block_table", f"entry {bad}", f"must index a block in [0, {p.num_blocks}) for every used block")


def check_metadata_args(*, actual_seq_lengths_query, actual_seq_lengths_key, num_heads_q,
                        num_heads_k, head_dim, query_quant_mode, key_quant_mode, batch_size,
                        max_seqlen_q, max_seqlen_k, layout_query, layout_key, sparse_count,
                        sparse_mode, pre_tokens, next_tokens, cmp_ratio, device) -> int:
    """Check the metadata op's arguments (SPEC §2); return the batch size."""
    check_attributes(query_quant_mode=query_quant_mode, key_quant_mode=key_quant_mode,
                     layout_query=layout_query, layout_key=layout_key, sparse_count=sparse_count,
                     sparse_mode=sparse_mode, pre_tokens=pre_tokens, next_tokens=next_tokens,
                     cmp_ratio=cmp_ratio)
    for name, value, want in (("num_heads_q", num_heads_q, NUM_HEADS_Q),
                              ("num_heads_k", num_heads_k, NUM_HEADS_K), ("head_dim", head_dim, HEAD_DIM)):
        if value != want:
            _fail(name, value, f"must be {want}")
    for name, value in (("batch_size", batch_size), ("max_seqlen_q", max_seqlen_q),
                        ("max_seqlen_k", max_seqlen_k)):
        if value < 0:
            _fail(name, value, "must be >= 0 (0: unknown)")
        if value > INT32_MAX:
            _fail(name, value, f"must be at most {INT32_MAX} (the metadata holds int32)")
    if actual_seq_lengths_key is None:
        _fail("actual_seq_lengths_key", None, "is required for layout_key 'PA_BSND'")
    _metadata_device(device)  # a bad name fails before the lengths are looked at
    if actual_seq_lengths_key.dim() != 1:
        _fail("actual_seq_lengths_key", list(actual_seq_lengths_key.shape), "must be 1-D [B]")
    batch = actual_seq_lengths_key.shape[0]
    if batch_size not in (0, batch):
        _fail("batch_size", batch_size, f"must be 0 or len(actual_seq_lengths_key) = {batch}")
    _check_lengths_tensor("actual_seq_lengths_key", actual_seq_lengths_key, (batch,), actual_seq_lengths_key.device)
    sizes = (batch,) if layout_query == "BSND" else (batch, batch + 1)
    if layout_query == "TND" and actual_seq_lengths_query is None:
        _fail("actual_seq_lengths_query", None, "is required for layout_query 'TND' (cumulative lengths)")
    if layout_query == "BSND" and actual_seq_lengths_query is None and max_seqlen_q == 0:
        _fail("max_seqlen_q", 0, "must be > 0 when actual_seq_lengths_query is not given")
    for name, t in (("actual_seq_lengths_query", actual_seq_lengths_query),
                    ("actual_seq_lengths_key", actual_seq_lengths_key)):
        if t is not None:
            _check_lengths_tensor(name, t, sizes if name.endswith("query") else (batch,), t.device)
    check_metadata_device(actual_seq_lengths_query, actual_seq_lengths_key, device)
    return batch


def _metadata_device(device: str) -> torch.device:
    try:
        return torch.device(device)
    except RuntimeError:
        _fail("device", repr(device), "must name a device this torch knows (an NPU needs torch_npu)")


def check_metadata_device(actual_seq_lengths_query, actual_seq_lengths_key, device: str) -> None:
    """The length tensors must be on `device` (SPEC §2: the metadata is computed there)."""
    dev = _metadata_device(device)
    for name, t in (("actual_seq_lengths_query", actual_seq_lengths_query),
                    ("actual_seq_lengths_key", actual_seq_lengths_key)):
        if t is not None and (t.device.type != dev.type or (
                dev.type != "cpu" and dev.index is not None and t.device.index != dev.index)):
            _fail(name, t.device, f"must be on device {device!r} (the metadata is computed there)")
