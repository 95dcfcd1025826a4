// How the binding reaches the aclnn API of this package's op package: torch_npu's
// EXEC_NPU_CMD_EXT (op_plugin/utils/op_api_common_base.h) resolves aclnn<Op>GetWorkspaceSize /
// aclnn<Op> by name -- custom op packages installed under ASCEND_CUSTOM_OPP_PATH included --,
// converts tensors, attributes and strings, allocates the workspace from the caching allocator
// and runs on the current stream through torch_npu's task queue.
#ifndef CUSTOM_OPS_CSRC_NPU_ACLNN_CALL_H
#define CUSTOM_OPS_CSRC_NPU_ACLNN_CALL_H

#include <string>

#include <ATen/ATen.h>
#include <torch/library.h>

#include "op_plugin/utils/op_api_common_base.h"

namespace custom_ops_npu {

// aclnn takes string attributes as char*. EXEC_NPU_CMD_EXT binds its arguments by non-const
// reference, so the pointer must be a named variable, and the string must outlive the call.
inline char *AttrString(std::string &s) { return const_cast<char *>(s.c_str()); }

// Block-axis stride (elements) of a paged cache that may be a view: 0 when contiguous.
inline int64_t BlockStride(const at::Tensor &t) { return t.is_contiguous() ? 0 : t.stride(0); }

// The inner axes of a paged cache view must be dense (SPEC §1.1: non-contiguous along blocks only).
inline void CheckDenseInner(const at::Tensor &t, const char *name)
{
    int64_t expect = 1;
    for (int64_t d = t.dim() - 1; d >= 1; --d) {
        TORCH_CHECK(t.size(d) == 1 || t.stride(d) == expect, name,
                    " may be non-contiguous along dim 0 only, got strides ", t.strides());
        expect *= t.size(d);
    }
}

}  // namespace custom_ops_npu

#endif  // CUSTOM_OPS_CSRC_NPU_ACLNN_CALL_H
