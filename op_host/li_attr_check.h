// The attribute rules the indexer and its metadata op share (SPEC §1.1): one function, so the
// two ops accept exactly the same calls.
#ifndef CUSTOM_OPS_LI_ATTR_CHECK_H
#define CUSTOM_OPS_LI_ATTR_CHECK_H

#include <cstring>

#include "li_mask.h"
#include "li_op_check.h"
#include "li_tiling_math.h"

namespace optiling {

constexpr int64_t INT64_MAX_ATTR = 9223372036854775807;

struct SelectionAttrs {
    int64_t queryQuantMode;
    int64_t keyQuantMode;
    const char *layoutQuery;
    const char *layoutKey;
    int64_t sparseCount;
    int64_t sparseMode;
    int64_t preTokens;
    int64_t nextTokens;
    int64_t cmpRatio;
};

inline const char *OrNone(const char *s) { return s == nullptr ? "(none)" : s; }

inline ge::graphStatus CheckSelectionAttrs(const char *op, const SelectionAttrs &a, bool ascend950)
{
    CHECK_RULE(a.queryQuantMode == 0, op, "query_quant_mode must be 0 (per-token-head), got %ld", a.queryQuantMode);
    CHECK_RULE(a.keyQuantMode == 0, op, "key_quant_mode must be 0 (per-token-head), got %ld", a.keyQuantMode);
    CHECK_RULE(a.layoutQuery != nullptr &&
                   (std::strcmp(a.layoutQuery, "BSND") == 0 || std::strcmp(a.layoutQuery, "TND") == 0),
               op, "layout_query must be BSND or TND, got %s", OrNone(a.layoutQuery));
    CHECK_RULE(a.layoutKey != nullptr && std::strcmp(a.layoutKey, "PA_BSND") == 0, op,
               "layout_key must be PA_BSND, got %s", OrNone(a.layoutKey));
    CHECK_RULE(a.sparseCount >= 1 && a.sparseCount <= li::MAX_SPARSE_COUNT, op,
               "sparse_count must be in [1, %ld], got %ld", li::MAX_SPARSE_COUNT, a.sparseCount);
    CHECK_RULE(a.sparseMode == li::SPARSE_MODE_ALL || a.sparseMode == li::SPARSE_MODE_CAUSAL, op,
               "sparse_mode must be 0 or 3, got %ld", a.sparseMode);
    CHECK_RULE(a.preTokens == INT64_MAX_ATTR, op, "pre_tokens must be %ld (the default), got %ld", INT64_MAX_ATTR,
               a.preTokens);
    CHECK_RULE(a.nextTokens == INT64_MAX_ATTR, op, "next_tokens must be %ld (the default), got %ld", INT64_MAX_ATTR,
               a.nextTokens);
    if (ascend950) {
        CHECK_RULE(a.cmpRatio == 1 || a.cmpRatio == 4 || a.cmpRatio == 128, op,
                   "cmp_ratio must be 1, 4 or 128 on Ascend 950, got %ld", a.cmpRatio);
    } else {
        CHECK_RULE(li::IsPowerOfTwo(a.cmpRatio) && a.cmpRatio <= li::MAX_CMP_RATIO, op,
                   "cmp_ratio must be a power of two in [1, %ld], got %ld", li::MAX_CMP_RATIO, a.cmpRatio);
    }
    return ge::GRAPH_SUCCESS;
}

}  // namespace optiling

#endif  // CUSTOM_OPS_LI_ATTR_CHECK_H
