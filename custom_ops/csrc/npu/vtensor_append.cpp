// NPU kernel of custom::vtensor_append_ (SPEC §3) as the internal op _vtensor_append_npu:
// cache[b, positions[b] + t] = states[b, t] in place through aclnnVtensorAppend. Rows outside
// [0, S), and with `limits` rows at or past limits[b] (a virtual cache's mapped tokens), are not
// written. custom_ops/vtensor/ops.py registers vtensor_append_ for the NPU: its checks, then this
// op with the cache's limits, then the count of the skipped rows (device ops, no sync), so the
// graph form (capacity_view + resize_backing) never writes into unmapped memory. The cache may
// be a strided view (sequence-major or per-sequence); its B and S strides are passed on.
#include "aclnn_call.h"

namespace custom_ops_npu {

void vtensor_append_npu(at::Tensor &cache,                           // [B, S, H, D], H * D dense
                        const at::Tensor &states,                    // [B, T, H, D]
                        const at::Tensor &positions,                 // [B] int32 / int64
                        const c10::optional<at::Tensor> &limits)     // [B] int64, or none
{
    TORCH_CHECK(cache.dim() == 4 && cache.stride(3) == 1 && (cache.size(2) == 1 || cache.stride(2) == cache.size(3)),
                "vtensor_append_: cache must be [B, S, H, D] with dense H and D, got strides ", cache.strides());
    // a stride of 0 on B or S (an expanded cache) would write several rows to one place, and the
    // tiling reads a 0 stride as "unset" (a dense cache)
    TORCH_CHECK((cache.size(0) == 1 || cache.stride(0) > 0) && (cache.size(1) == 1 || cache.stride(1) > 0),
                "vtensor_append_: cache must not repeat rows (a stride of 0 on B or S), got strides ",
                cache.strides());
    TORCH_CHECK(!limits.has_value() || (limits->dim() == 1 && limits->size(0) == cache.size(0) &&
                                        limits->scalar_type() == at::kLong && limits->device() == cache.device()),
                "vtensor_append_: limits must be int64 [B = ", cache.size(0), "] on the cache's device");
    const at::Tensor rows = states.contiguous();
    const int64_t cache_stride_b = cache.stride(0);
    const int64_t cache_stride_s = cache.stride(1);
    EXEC_NPU_CMD_EXT(aclnnVtensorAppend, cache, rows, positions, limits, cache_stride_b, cache_stride_s);
}

}  // namespace custom_ops_npu

TORCH_LIBRARY_FRAGMENT(custom, m)
{
    m.def("_vtensor_append_npu(Tensor(a!) cache, Tensor states, Tensor positions, Tensor? limits) -> ()");
}

TORCH_LIBRARY_IMPL(custom, PrivateUse1, m)
{
    m.impl("_vtensor_append_npu", &custom_ops_npu::vtensor_append_npu);
}
