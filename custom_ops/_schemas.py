"""Every op's schema, defined once, as fragments of the ``custom`` namespace.

Another package (Ascend's cann-recipes, a second copy of this one) may define ``torch.ops.custom``
too, so we register as a FRAGMENT and skip names that already exist: importing twice is harmless.
Backends register only implementations, in their own files.
"""
import torch

_INT64_MAX = "9223372036854775807"

SCHEMAS = {
    # Indexer (SPEC §1). Outputs: sparse_indices int32 [B, S1, N2, K] (BSND) / [T, N2, K] (TND);
    # sparse_values float32, same shape if return_value else [0].
    "npu_vllm_quant_lightning_indexer": (
        "npu_vllm_quant_lightning_indexer(Tensor query, Tensor key, Tensor weights, "
        "Tensor query_dequant_scale, Tensor key_dequant_scale, *, "
        "Tensor? actual_seq_lengths_query=None, Tensor? actual_seq_lengths_key=None, "
        "Tensor? block_table=None, Tensor? metadata=None, "
        "int query_quant_mode=0, int key_quant_mode=0, "
        'str layout_query="BSND", str layout_key="PA_BSND", '
        "int sparse_count=2048, int sparse_mode=3, "
        f"int pre_tokens={_INT64_MAX}, int next_tokens={_INT64_MAX}, "
        "int cmp_ratio=1, bool return_value=False) -> (Tensor sparse_indices, Tensor sparse_values)"
    ),
    # Work split of the indexer (SPEC §2): int32 [1024] on `device`.
    "npu_vllm_quant_lightning_indexer_metadata": (
        "npu_vllm_quant_lightning_indexer_metadata(*, "
        "Tensor? actual_seq_lengths_query, Tensor? actual_seq_lengths_key, "
        "int num_heads_q, int num_heads_k, int head_dim, "
        "int query_quant_mode=0, int key_quant_mode=0, "
        "SymInt batch_size=0, SymInt max_seqlen_q=0, SymInt max_seqlen_k=0, "
        'str layout_query="BSND", str layout_key="PA_BSND", '
        "int sparse_count=2048, int sparse_mode=3, "
        f"int pre_tokens={_INT64_MAX}, int next_tokens={_INT64_MAX}, "
        'int cmp_ratio=1, str device="npu") -> Tensor'
    ),
    # Virtual-memory KV append (SPEC §3).
    # --- vtensor (begin) ---
    "vtensor_reserve_one_token": (
        "vtensor_reserve_one_token(Tensor(a) key_cache, Tensor key_states) -> Tensor(a)"
    ),
    "vtensor_append": "vtensor_append(Tensor(a) cache, Tensor states) -> Tensor(a)",
    "vtensor_append_": "vtensor_append_(Tensor(a!) cache, Tensor states, Tensor positions) -> ()",
    # --- vtensor (end) ---
}

lib = torch.library.Library("custom", "FRAGMENT")  # noqa: TOR901 - fragments are the point


def _define_all() -> None:
    namespace = torch.ops.custom
    for name, schema in SCHEMAS.items():
        if not hasattr(namespace, name):
            lib.define(schema)


_define_all()
