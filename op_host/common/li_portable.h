// Portable C++ shared by host tiling, AscendC kernels and the CPU tests: no CANN types.
//
// The same header compiles with g++ (host library, ctest) and with the AscendC compiler, where
// every function must be an __aicore__ inline scalar function and the standard library is absent.
#ifndef CUSTOM_OPS_LI_PORTABLE_H
#define CUSTOM_OPS_LI_PORTABLE_H

#if defined(__CCE_AICORE__)
#define LI_INLINE __aicore__ inline
#else
#include <cstdint>
#define LI_INLINE inline
#endif

namespace li {

LI_INLINE int64_t CeilDiv(int64_t a, int64_t b) { return b == 0 ? 0 : (a + b - 1) / b; }
LI_INLINE int64_t FloorDiv(int64_t a, int64_t b)
{
    // Python's floor division: SPEC §1.3 divides possibly negative numbers by cmp_ratio.
    const int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
LI_INLINE int64_t Min(int64_t a, int64_t b) { return a < b ? a : b; }
LI_INLINE int64_t Max(int64_t a, int64_t b) { return a > b ? a : b; }
LI_INLINE int64_t Clamp(int64_t v, int64_t lo, int64_t hi) { return Min(Max(v, lo), hi); }
LI_INLINE int64_t AlignUp(int64_t v, int64_t a) { return CeilDiv(v, a) * a; }
LI_INLINE bool IsPowerOfTwo(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

}  // namespace li

#endif  // CUSTOM_OPS_LI_PORTABLE_H
