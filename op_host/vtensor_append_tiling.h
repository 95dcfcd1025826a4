// Tiling data of VtensorAppend: the li::AppendShape of common/vtensor_append_math.h plus the UB pass.
#ifndef CUSTOM_OPS_VTENSOR_APPEND_TILING_H
#define CUSTOM_OPS_VTENSOR_APPEND_TILING_H

#include "register/tilingdata_base.h"

namespace optiling {

BEGIN_TILING_DATA_DEF(VtensorAppendTilingData)
TILING_DATA_FIELD_DEF(int64_t, batch);
TILING_DATA_FIELD_DEF(int64_t, tokens);
TILING_DATA_FIELD_DEF(int64_t, capacity);
TILING_DATA_FIELD_DEF(int64_t, rowElems);
TILING_DATA_FIELD_DEF(int64_t, rowBytes);
TILING_DATA_FIELD_DEF(int64_t, cacheStrideB);
TILING_DATA_FIELD_DEF(int64_t, cacheStrideS);
TILING_DATA_FIELD_DEF(int64_t, rowsPerPass);
TILING_DATA_FIELD_DEF(int64_t, usedCores);
TILING_DATA_FIELD_DEF(int64_t, hasLimits);  // 1: rows at or past limits[b] are not written
END_TILING_DATA_DEF;

REGISTER_TILING_DATA_CLASS(VtensorAppend, VtensorAppendTilingData)

struct VtensorAppendCompileInfo {};

}  // namespace optiling

#endif  // CUSTOM_OPS_VTENSOR_APPEND_TILING_H
