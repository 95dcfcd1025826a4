// Where the indexer's cube finds its operands, as plain arithmetic the CPU tests can check against
// the fractal formats (asc-devkit docs, 矩阵计算分形介绍): L1 holds Q and K as Nz (16-row fractals
// of c0 = 32 bytes, one column block of l1Rows rows after another); on Atlas A2/A3 the cube
// multiplies A in Zz (per 16-row fractal, its K fractals in a row) by B in Zn (per K fractal, the
// N fractals in a row). Every move is a LoadData2D of 512-byte fractals.
#ifndef CUSTOM_OPS_LI_CUBE_LAYOUT_H
#define CUSTOM_OPS_LI_CUBE_LAYOUT_H

#include "li_portable.h"

namespace li {

constexpr int64_t FRACTAL_ROWS = 16;

// Element offset of (row, col) in an Nz matrix whose column blocks hold `l1Rows` rows of c0.
// Nd2Nz with dstNzC0Stride = l1Rows and dstNzNStride = 1 writes source row i at row start + i.
LI_INLINE int64_t NzOffset(int64_t row, int64_t col, int64_t c0, int64_t l1Rows)
{
    return (col / c0) * l1Rows * c0 + row * c0 + col % c0;
}

// One LoadData2D: `repeat` fractals from fractal `start` of the source, `stride` fractals apart,
// to consecutive fractals of the destination from fractal `dst`.
struct FractalCopy {
    int64_t start;
    int64_t repeat;
    int64_t stride;
    int64_t dst;
};

// Zz A tile, call r of ceil(m / 16): Q's row fractal m0 / 16 + r with all its kFractals K fractals.
LI_INLINE FractalCopy ZzRowLoad(int64_t r, int64_t m0, int64_t kFractals, int64_t l1Rows)
{
    return {m0 / FRACTAL_ROWS + r, kFractals, l1Rows / FRACTAL_ROWS, r * kFractals};
}

// Zn B tile (Kᵀ of keys [n0, n0 + n)), call kf of kFractals: the tile's key fractals of K fractal kf.
LI_INLINE FractalCopy ZnColumnLoad(int64_t kf, int64_t n0, int64_t n, int64_t l1Rows)
{
    const int64_t nFractals = CeilDiv(n, FRACTAL_ROWS);
    return {kf * (l1Rows / FRACTAL_ROWS) + n0 / FRACTAL_ROWS, nFractals, 1, kf * nFractals};
}

}  // namespace li

#endif  // CUSTOM_OPS_LI_CUBE_LAYOUT_H
