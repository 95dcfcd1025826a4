// NPU implementation of custom::npu_vllm_quant_lightning_indexer_metadata: int32[1024] on the
// lengths' device (or `device`), computed by aclnnVllmQuantLightningIndexerMetadata on one vector
// core -- no host sync, capturable in an aclgraph.
#include "aclnn_call.h"
#include "li_metadata_format.h"

namespace custom_ops_npu {

at::Tensor npu_vllm_quant_lightning_indexer_metadata(
    const c10::optional<at::Tensor> &actual_seq_lengths_query,  // [B] or [B + 1] int32
    const c10::optional<at::Tensor> &actual_seq_lengths_key,    // [B] int32
    int64_t num_heads_q, int64_t num_heads_k, int64_t head_dim, int64_t query_quant_mode, int64_t key_quant_mode,
    int64_t batch_size, int64_t max_seqlen_q, int64_t max_seqlen_k, c10::string_view layout_query,
    c10::string_view layout_key, int64_t sparse_count, int64_t sparse_mode, int64_t pre_tokens, int64_t next_tokens,
    int64_t cmp_ratio, c10::string_view device)
{
    at::Device out_device(std::string{device});
    if (actual_seq_lengths_key.has_value()) {
        out_device = actual_seq_lengths_key->device();
    } else if (actual_seq_lengths_query.has_value()) {
        out_device = actual_seq_lengths_query->device();
    }
    at::Tensor metadata = at::empty({li::METADATA_LEN}, at::TensorOptions().dtype(at::kInt).device(out_device));
    std::string lq(layout_query);
    std::string lk(layout_key);
    char *lq_attr = AttrString(lq);
    char *lk_attr = AttrString(lk);
    const int64_t aic_core_num = 0;  // eager mode: the platform's AI cores, as the indexer launches
    EXEC_NPU_CMD_EXT(aclnnVllmQuantLightningIndexerMetadata, actual_seq_lengths_query, actual_seq_lengths_key,
                     num_heads_q, num_heads_k, head_dim, query_quant_mode, key_quant_mode, batch_size, max_seqlen_q,
                     max_seqlen_k, lq_attr, lk_attr, sparse_count, sparse_mode, pre_tokens, next_tokens,
                     cmp_ratio, aic_core_num, metadata);
    return metadata;
}

}  // namespace custom_ops_npu

TORCH_LIBRARY_IMPL(custom, PrivateUse1, m)
{
    m.impl("npu_vllm_quant_lightning_indexer_metadata", &custom_ops_npu::npu_vllm_quant_lightning_indexer_metadata);
}
