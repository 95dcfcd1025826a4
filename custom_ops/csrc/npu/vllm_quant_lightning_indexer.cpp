// NPU implementation of custom::npu_vllm_quant_lightning_indexer: allocates the outputs, passes
// the key cache's block strides, calls aclnnVllmQuantLightningIndexer. The schema lives in
// custom_ops/_schemas.py; argument checks ran in Python (custom_ops/_checks.py) and run again in
// the op's tiling.
#include <tuple>

#include "aclnn_call.h"

namespace custom_ops_npu {

std::tuple<at::Tensor, at::Tensor> npu_vllm_quant_lightning_indexer(
    const at::Tensor &query,                 // [B, S1, 64, 128] or [T, 64, 128], int8 / fp8
    const at::Tensor &key,                   // [num_blocks, block_size, 1, 128]
    const at::Tensor &weights,               // [B, S1, 64] or [T, 64]
    const at::Tensor &query_dequant_scale,   // like weights
    const at::Tensor &key_dequant_scale,     // [num_blocks, block_size, 1]
    const c10::optional<at::Tensor> &actual_seq_lengths_query, const c10::optional<at::Tensor> &actual_seq_lengths_key,
    const c10::optional<at::Tensor> &block_table, const c10::optional<at::Tensor> &metadata, int64_t query_quant_mode,
    int64_t key_quant_mode, c10::string_view layout_query, c10::string_view layout_key, int64_t sparse_count,
    int64_t sparse_mode, int64_t pre_tokens, int64_t next_tokens, int64_t cmp_ratio, bool return_value)
{
    TORCH_CHECK(metadata.has_value(), "metadata must be given on the NPU (from npu_vllm_quant_lightning_indexer_metadata), got None");
    CheckDenseInner(key, "key");
    CheckDenseInner(key_dequant_scale, "key_dequant_scale");
    std::vector<int64_t> shape(query.sizes().begin(), query.sizes().end() - 2);  // [B, S1] or [T]
    shape.push_back(key.size(2));
    shape.push_back(sparse_count);
    at::Tensor sparse_indices = at::empty(shape, query.options().dtype(at::kInt));
    at::Tensor sparse_values = return_value ? at::empty(shape, query.options().dtype(at::kFloat))
                                            : at::empty({0}, query.options().dtype(at::kFloat));
    std::string lq(layout_query);
    std::string lk(layout_key);
    char *lq_attr = AttrString(lq);
    char *lk_attr = AttrString(lk);
    const int64_t key_stride0 = BlockStride(key);
    const int64_t key_scale_stride0 = BlockStride(key_dequant_scale);
    EXEC_NPU_CMD_EXT(aclnnVllmQuantLightningIndexer, query, key, weights, query_dequant_scale, key_dequant_scale,
                     actual_seq_lengths_query, actual_seq_lengths_key, block_table, metadata, query_quant_mode,
                     key_quant_mode, lq_attr, lk_attr, sparse_count, sparse_mode, pre_tokens, next_tokens,
                     cmp_ratio, return_value, key_stride0, key_scale_stride0, sparse_indices, sparse_values);
    return {sparse_indices, sparse_values};
}

}  // namespace custom_ops_npu

TORCH_LIBRARY_IMPL(custom, PrivateUse1, m)
{
    m.impl("npu_vllm_quant_lightning_indexer", &custom_ops_npu::npu_vllm_quant_lightning_indexer);
}
