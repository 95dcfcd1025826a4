// NPU implementation of custom::vtensor_append_ (SPEC §3): cache[b, positions[b] + t] = states[b, t]
// in place through aclnnVtensorAppend; rows outside [0, S) are dropped by the kernel. The cache
// may be a strided view (sequence-major or per-sequence); its B and S strides are passed on.
#include "aclnn_call.h"

namespace custom_ops_npu {

void vtensor_append_(at::Tensor &cache,          // [B, S, H, D], H * D dense
                     const at::Tensor &states,   // [B, T, H, D]
                     const at::Tensor &positions) // [B] int32 / int64
{
    TORCH_CHECK(cache.dim() == 4 && cache.stride(3) == 1 && (cache.size(2) == 1 || cache.stride(2) == cache.size(3)),
                "vtensor_append_: cache must be [B, S, H, D] with dense H and D, got strides ", cache.strides());
    // a stride of 0 on B or S (an expanded cache) would write several rows to one place, and the
    // tiling reads a 0 stride as "unset" (a dense cache)
    TORCH_CHECK((cache.size(0) == 1 || cache.stride(0) > 0) && (cache.size(1) == 1 || cache.stride(1) > 0),
                "vtensor_append_: cache must not repeat rows (a stride of 0 on B or S), got strides ",
                cache.strides());
    const at::Tensor rows = states.contiguous();
    const int64_t cache_stride_b = cache.stride(0);
    const int64_t cache_stride_s = cache.stride(1);
    EXEC_NPU_CMD_EXT(aclnnVtensorAppend, cache, rows, positions, cache_stride_b, cache_stride_s);
}

}  // namespace custom_ops_npu

TORCH_LIBRARY_IMPL(custom, PrivateUse1, m)
{
    m.impl("vtensor_append_", &custom_ops_npu::vtensor_append_);
}
