// Arithmetic of the NPU KV append kernel (vtensor_append_, SPEC §3): states [B, T, H, D] written
// into cache [B, S_cap, H, D] at rows positions[b] + t, any strides on the B and S axes (the
// sequence-major and the per-sequence physical layouts are both such strides).
#ifndef CUSTOM_OPS_VTENSOR_APPEND_MATH_H
#define CUSTOM_OPS_VTENSOR_APPEND_MATH_H

#include "li_portable.h"

namespace li {

struct AppendShape {
    int64_t batch;     // B
    int64_t tokens;    // T new tokens per sequence
    int64_t capacity;  // S_cap
    int64_t rowElems;  // H * D, contiguous in cache and states
    int64_t cacheStrideB;
    int64_t cacheStrideS;
};

// Element offset of cache row (b, s); -1 when s is outside [0, min(limit, capacity)): such a row
// is skipped, never written (a bad position must not write out of bounds). `limit` is how many
// tokens of sequence b have memory mapped behind them (a virtual cache's `limits[b]`; the
// capacity for an ordinary cache): a row past it would write to unmapped memory.
LI_INLINE int64_t CacheRowOffset(const AppendShape &a, int64_t b, int64_t s, int64_t limit)
{
    if (b < 0 || b >= a.batch || s < 0 || s >= a.capacity || s >= limit) {
        return -1;
    }
    return b * a.cacheStrideB + s * a.cacheStrideS;
}

LI_INLINE int64_t CacheRowOffset(const AppendShape &a, int64_t b, int64_t s)
{
    return CacheRowOffset(a, b, s, a.capacity);
}

// Rows (b, t) are numbered b * T + t; core `core` of `cores` copies [begin, end).
struct AppendRange {
    int64_t begin;
    int64_t end;
};

LI_INLINE AppendRange AppendRows(const AppendShape &a, int64_t core, int64_t cores)
{
    const int64_t rows = a.batch * a.tokens;
    const int64_t per = CeilDiv(rows, cores);
    return {Min(core * per, rows), Min((core + 1) * per, rows)};
}

// Rows one UB pass carries: as many whole rows as fit in half the UB (double buffering).
LI_INLINE int64_t RowsPerPass(int64_t rowBytes, int64_t ubBytes)
{
    return rowBytes <= 0 ? 0 : (ubBytes / 2) / AlignUp(rowBytes, 32);
}

// Cores worth using: no more than there are rows.
LI_INLINE int64_t AppendCores(const AppendShape &a, int64_t vecCoreNum)
{
    return Clamp(a.batch * a.tokens, 1, vecCoreNum);
}

}  // namespace li

#endif  // CUSTOM_OPS_VTENSOR_APPEND_MATH_H
