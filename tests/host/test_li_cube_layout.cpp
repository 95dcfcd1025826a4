// The cube's operand moves (li_cube_layout.h), emulated fractal by fractal: Q and a paged key
// gather land in L1 as Nz, the loads build L0A / L0B, and Q·Kᵀ read back through the Zz and Zn
// definitions equals the direct product for every tile of a partial unit.
#include <random>
#include <vector>

#include "check.h"
#include "li_cube_layout.h"

namespace {

constexpr int64_t C0 = 32;  // int8: 32 one-byte elements per fractal row
constexpr int64_t FRACTAL = li::FRACTAL_ROWS * C0;
constexpr int64_t D = 128;
constexpr int64_t K_FRACTALS = D / C0;
constexpr int64_t KEY_L1_ROWS = 512;  // li::S2_SUBTILE
constexpr int64_t TILE = 128;

using Buffer = std::vector<int32_t>;

Buffer RandomRows(int64_t rows, uint32_t seed)
{
    std::mt19937 gen(seed);
    std::uniform_int_distribution<int32_t> value(-128, 127);
    Buffer m(rows * D);
    for (int32_t &v : m) {
        v = value(gen);
    }
    return m;
}

// Nd2Nz of source rows [src0, src0 + rows) to Nz rows from `at` of an L1 image.
void Nd2Nz(const Buffer &nd, int64_t src0, int64_t rows, int64_t at, int64_t l1Rows, Buffer &l1)
{
    for (int64_t i = 0; i < rows; ++i) {
        for (int64_t col = 0; col < D; ++col) {
            l1[li::NzOffset(at + i, col, C0, l1Rows)] = nd[(src0 + i) * D + col];
        }
    }
}

void Load(const Buffer &src, const li::FractalCopy &c, Buffer &dst)
{
    for (int64_t i = 0; i < c.repeat; ++i) {
        for (int64_t e = 0; e < FRACTAL; ++e) {
            dst[(c.dst + i) * FRACTAL + e] = src[(c.start + i * c.stride) * FRACTAL + e];
        }
    }
}

// C[i][j] of A in Zz (M1, K1, M0, K0) times B in Zn (K1, N1, N0, K0) with n columns.
int64_t ZzTimesZn(const Buffer &a, const Buffer &b, int64_t i, int64_t j, int64_t n)
{
    const int64_t nFractals = li::CeilDiv(n, li::FRACTAL_ROWS);
    int64_t sum = 0;
    for (int64_t k = 0; k < D; ++k) {
        const int64_t ai = ((i / 16) * K_FRACTALS + k / C0) * FRACTAL + (i % 16) * C0 + k % C0;
        const int64_t bi = ((k / C0) * nFractals + j / 16) * FRACTAL + (j % 16) * C0 + k % C0;
        sum += static_cast<int64_t>(a[ai]) * b[bi];
    }
    return sum;
}

int64_t Dot(const Buffer &q, int64_t qi, const Buffer &k, int64_t kj)
{
    int64_t sum = 0;
    for (int64_t d = 0; d < D; ++d) {
        sum += static_cast<int64_t>(q[qi * D + d]) * k[kj * D + d];
    }
    return sum;
}

// A unit of 3 query tokens (m = 192) against the second key sub-tile of batch 0: 300 keys that
// start mid-block in a cache of 48-row blocks, stored in reverse block order (a paged table).
struct Unit {
    int64_t m = 3 * 64;
    int64_t n = 300;
    int64_t qRows = 192;  // m rounded up to 16: Q's column-block height in L1
    Buffer q = RandomRows(192, 1);
    Buffer cache = RandomRows(40 * 48, 2);
    Buffer qL1 = Buffer(192 * D);
    Buffer kL1 = Buffer(KEY_L1_ROWS * D);
    std::vector<int64_t> keyRow;  // cache row of sub-tile key j

    Unit()
    {
        Nd2Nz(q, 0, m, 0, qRows, qL1);
        const int64_t blockSize = 48;
        const int64_t k0 = 512;
        for (int64_t j = 0; j < n;) {
            const int64_t key = k0 + j;
            const int64_t block = 39 - key / blockSize;
            const int64_t row = key % blockSize;
            const int64_t rows = li::Min(blockSize - row, n - j);
            Nd2Nz(cache, block * blockSize + row, rows, j, KEY_L1_ROWS, kL1);
            for (int64_t i = 0; i < rows; ++i) {
                keyRow.push_back(block * blockSize + row + i);
            }
            j += rows;
        }
    }
};

// Mismatching entries of every [128 x 128] tile when B is loaded by `loadB`.
template <typename LoadB>
int64_t TileMismatches(const Unit &u, LoadB loadB)
{
    int64_t bad = 0;
    for (int64_t m0 = 0; m0 < u.m; m0 += TILE) {
        const int64_t m = li::Min(TILE, u.m - m0);
        Buffer a(li::CeilDiv(m, 16) * K_FRACTALS * FRACTAL);
        for (int64_t r = 0; r < li::CeilDiv(m, 16); ++r) {
            Load(u.qL1, li::ZzRowLoad(r, m0, K_FRACTALS, u.qRows), a);
        }
        for (int64_t n0 = 0; n0 < u.n; n0 += TILE) {
            const int64_t n = li::Min(TILE, u.n - n0);
            Buffer b(K_FRACTALS * li::CeilDiv(n, 16) * FRACTAL);
            loadB(u.kL1, n0, n, b);
            for (int64_t i = 0; i < m; ++i) {
                for (int64_t j = 0; j < n; ++j) {
                    bad += ZzTimesZn(a, b, i, j, n) != Dot(u.q, m0 + i, u.cache, u.keyRow[n0 + j]);
                }
            }
        }
    }
    return bad;
}

}  // namespace

TEST(nz_offset_places_rows_in_column_blocks_of_c0)
{
    CHECK_EQ(li::NzOffset(0, 0, C0, 512), 0);
    CHECK_EQ(li::NzOffset(1, 0, C0, 512), C0);
    CHECK_EQ(li::NzOffset(0, C0, C0, 512), 512 * C0);
    CHECK_EQ(li::NzOffset(17, C0 + 3, C0, 512), 512 * C0 + 17 * C0 + 3);
}

TEST(zz_and_zn_loads_give_q_times_k_transposed_for_every_tile)
{
    const Unit u;
    CHECK_EQ(static_cast<int64_t>(u.keyRow.size()), u.n);
    const int64_t bad = TileMismatches(u, [](const Buffer &kL1, int64_t n0, int64_t n, Buffer &b) {
        for (int64_t kf = 0; kf < K_FRACTALS; ++kf) {
            Load(kL1, li::ZnColumnLoad(kf, n0, n, KEY_L1_ROWS), b);
        }
    });
    CHECK_EQ(bad, 0);
}

TEST(key_fractals_in_row_order_are_not_zn)
{
    // The order the first version loaded (per key fractal, its K fractals) must fail this check,
    // or the test above could not tell the layouts apart.
    const Unit u;
    const int64_t bad = TileMismatches(u, [](const Buffer &kL1, int64_t n0, int64_t n, Buffer &b) {
        for (int64_t r = 0; r < li::CeilDiv(n, 16); ++r) {
            Load(kL1, {n0 / 16 + r, K_FRACTALS, KEY_L1_ROWS / 16, r * K_FRACTALS}, b);
        }
    });
    CHECK(bad > 0);
}
