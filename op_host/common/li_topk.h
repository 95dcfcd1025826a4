// The kernel's top-k bookkeeping, as plain scalar code: the model the vector kernel's
// Sort/MrgSort pipeline implements and the CPU tests check.
//
// Order (SPEC §1.4): score descending, ties to the smaller index. The kernel keeps it without
// comparing indices: keys enter a sort in index order and the sort keeps equal scores in input
// order; merges always put the list of earlier keys first, and MrgSort takes the first list's
// element on a tie. MergeTopK does exactly that, so it needs every index of `a` below every
// index of `b` -- which holds for the running buffer (units in kb order) and for the fold of
// partial lists (workers in key order).
#ifndef CUSTOM_OPS_LI_TOPK_H
#define CUSTOM_OPS_LI_TOPK_H

#include "li_portable.h"

namespace li {

constexpr int32_t INVALID_INDEX = -1;

// Entries of a row's final list that hold real indices: the rest is -1 / -inf padding.
LI_INLINE int64_t ValidCount(int64_t visibleKeys, int64_t sparseCount)
{
    return Clamp(visibleKeys, 0, sparseCount);
}

// Merges two SPEC-ordered lists (lengths na, nb; -1 entries end a list) into out[0, k), padding
// with -1 / negInf. Returns the number of real entries written.
LI_INLINE int64_t MergeTopK(const int32_t *aIdx, const float *aVal, int64_t na, const int32_t *bIdx,
                            const float *bVal, int64_t nb, int64_t k, int32_t *outIdx, float *outVal,
                            float negInf)
{
    int64_t i = 0;
    int64_t j = 0;
    int64_t n = 0;
    while (n < k) {
        const bool aLive = i < na && aIdx[i] != INVALID_INDEX;
        const bool bLive = j < nb && bIdx[j] != INVALID_INDEX;
        if (!aLive && !bLive) {
            break;
        }
        const bool takeA = aLive && (!bLive || aVal[i] >= bVal[j]);
        outIdx[n] = takeA ? aIdx[i] : bIdx[j];
        outVal[n] = takeA ? aVal[i] : bVal[j];
        i += takeA ? 1 : 0;
        j += takeA ? 0 : 1;
        ++n;
    }
    for (int64_t m = n; m < k; ++m) {
        outIdx[m] = INVALID_INDEX;
        outVal[m] = negInf;
    }
    return n;
}

}  // namespace li

#endif  // CUSTOM_OPS_LI_TOPK_H
