// Host tiling of VtensorAppend: check shapes and strides, split the B * T rows over vector
// cores, size the UB pass. Tiling key 0 (int32 positions) / 1 (int64 positions); the optional
// `limits` [B] (int64) only sets a flag: the kernel reads it per sequence.
#include "li_op_check.h"
#include "li_tiling_math.h"
#include "register/op_impl_registry.h"
#include "tiling/platform/platform_ascendc.h"
#include "vtensor_append_math.h"
#include "vtensor_append_tiling.h"

namespace optiling {
namespace {

enum Input : size_t { CACHE, STATES, POSITIONS, LIMITS };
enum Attr : size_t { CACHE_STRIDE_B, CACHE_STRIDE_S };

ge::graphStatus TilingVtensorAppend(gert::TilingContext *ctx)
{
    const char *op = ctx->GetNodeName();
    const gert::StorageShape *cs = ctx->GetInputShape(CACHE);
    const gert::StorageShape *ss = ctx->GetInputShape(STATES);
    const gert::StorageShape *ps = ctx->GetInputShape(POSITIONS);
    CHECK_NOT_NULL(cs, op, "cache");
    CHECK_NOT_NULL(ss, op, "states");
    CHECK_NOT_NULL(ps, op, "positions");
    const gert::Shape &cache = cs->GetOriginShape();
    const gert::Shape &states = ss->GetOriginShape();
    const gert::Shape &pos = ps->GetOriginShape();
    CHECK_RULE(cache.GetDimNum() == 4, op, "cache must have 4 dims [B, S_cap, H, D], got %zu", cache.GetDimNum());
    CHECK_RULE(states.GetDimNum() == 4, op, "states must have 4 dims [B, T, H, D], got %zu", states.GetDimNum());
    CHECK_RULE(states.GetDim(0) == cache.GetDim(0) && states.GetDim(2) == cache.GetDim(2) &&
                   states.GetDim(3) == cache.GetDim(3),
               op, "states must match cache in B, H, D (%ld, %ld, %ld), got (%ld, %ld, %ld)", cache.GetDim(0),
               cache.GetDim(2), cache.GetDim(3), states.GetDim(0), states.GetDim(2), states.GetDim(3));
    CHECK_RULE(pos.GetDimNum() == 1 && pos.GetDim(0) == cache.GetDim(0), op, "positions must have shape [B = %ld], got %zu dims",
               cache.GetDim(0), pos.GetDimNum());
    const gert::StorageShape *ls = ctx->GetOptionalInputShape(LIMITS);
    CHECK_RULE(ls == nullptr || (ls->GetOriginShape().GetDimNum() == 1 &&
                                 ls->GetOriginShape().GetDim(0) == cache.GetDim(0)),
               op, "limits must have shape [B = %ld]", cache.GetDim(0));
    const gert::CompileTimeTensorDesc *cd = ctx->GetInputDesc(CACHE);
    const gert::CompileTimeTensorDesc *sd = ctx->GetInputDesc(STATES);
    CHECK_RULE(cd->GetDataType() == sd->GetDataType(), op, "states must have cache's dtype (id %d), got id %d",
               static_cast<int>(cd->GetDataType()), static_cast<int>(sd->GetDataType()));

    li::AppendShape a{cache.GetDim(0), states.GetDim(1), cache.GetDim(1), cache.GetDim(2) * cache.GetDim(3), 0, 0};
    const gert::RuntimeAttrs *attrs = ctx->GetAttrs();
    CHECK_NOT_NULL(attrs, op, "attrs");
    const int64_t strideB = *attrs->GetAttrPointer<int64_t>(CACHE_STRIDE_B);
    const int64_t strideS = *attrs->GetAttrPointer<int64_t>(CACHE_STRIDE_S);
    a.cacheStrideB = strideB > 0 ? strideB : a.capacity * a.rowElems;
    a.cacheStrideS = strideS > 0 ? strideS : a.rowElems;
    CHECK_RULE(a.cacheStrideS >= a.rowElems, op, "cache stride along S must be at least H * D = %ld, got %ld", a.rowElems,
               a.cacheStrideS);

    const platform_ascendc::PlatformAscendC platform(ctx->GetPlatformInfo());
    uint64_t ubBytes = 0;
    platform.GetCoreMemSize(platform_ascendc::CoreMemType::UB, ubBytes);
    const int64_t rowBytes = a.rowElems * ge::GetSizeByDataType(cd->GetDataType());
    const int64_t usableUb = li::UsableUbBytes(static_cast<int64_t>(ubBytes));
    const int64_t rowsPerPass = li::RowsPerPass(rowBytes, usableUb);
    CHECK_RULE(rowsPerPass > 0, op, "one cache row of %ld bytes must fit half the usable UB (%ld bytes)", rowBytes,
               usableUb);
    const int64_t cores = li::AppendCores(a, platform.GetCoreNumAiv());

    VtensorAppendTilingData data;
    data.set_batch(a.batch);
    data.set_tokens(a.tokens);
    data.set_capacity(a.capacity);
    data.set_rowElems(a.rowElems);
    data.set_rowBytes(rowBytes);
    data.set_cacheStrideB(a.cacheStrideB);
    data.set_cacheStrideS(a.cacheStrideS);
    data.set_rowsPerPass(rowsPerPass);
    data.set_usedCores(cores);
    data.set_hasLimits(ls != nullptr ? 1 : 0);
    data.SaveToBuffer(ctx->GetRawTilingData()->GetData(), ctx->GetRawTilingData()->GetCapacity());
    ctx->GetRawTilingData()->SetDataSize(data.GetDataSize());
    ctx->SetBlockDim(cores);
    ctx->SetTilingKey(ctx->GetInputDesc(POSITIONS)->GetDataType() == ge::DT_INT64 ? 1 : 0);
    size_t *workspace = ctx->GetWorkspaceSizes(1);
    workspace[0] = platform.GetLibApiWorkSpaceSize();
    return ge::GRAPH_SUCCESS;
}

ge::graphStatus TilingParseVtensorAppend(gert::TilingParseContext *)
{
    return ge::GRAPH_SUCCESS;
}

}  // namespace

IMPL_OP_OPTILING(VtensorAppend).Tiling(TilingVtensorAppend).TilingParse<VtensorAppendCompileInfo>(TilingParseVtensorAppend);

}  // namespace optiling
