// Builds split inputs and a unit-by-unit model of the split for the tests. The model shares only
// the mask helpers (li::QueryLen, li::VisibleKeys) with the code under test; those are checked
// key by key against a brute-force count in test_li_mask.cpp.
#ifndef CUSTOM_OPS_TESTS_HOST_SPLIT_FIXTURE_H
#define CUSTOM_OPS_TESTS_HOST_SPLIT_FIXTURE_H

#include <cstdint>
#include <random>
#include <vector>

#include "li_schedule.h"

struct Lens {
    std::vector<int32_t> v;
    int64_t operator()(int64_t i) const { return v[i]; }
};

struct Meta {
    std::vector<int32_t> v = std::vector<int32_t>(li::METADATA_LEN, -7);
    void operator()(int32_t i, int32_t x) const { const_cast<Meta *>(this)->v[i] = x; }
    int64_t operator()(int64_t i) const { return v[i]; }
};

struct Problem {
    li::SplitParams p;
    Lens q;
    Lens k;
};

// BSND with per-batch query lengths.
inline Problem Bsnd(std::vector<int32_t> s1, std::vector<int32_t> s2, int32_t maxS1, int32_t workers,
                    int32_t mode = li::SPARSE_MODE_CAUSAL, int32_t cmp = 1, int32_t sparse = 2048)
{
    const int32_t b = static_cast<int32_t>(s2.size());
    return {{{li::LAYOUT_BSND, b, b, maxS1}, maxS1, sparse, mode, cmp, workers, li::NPU_Q_BLOCK, li::NPU_K_BLOCK},
            {std::move(s1)},
            {std::move(s2)}};
}

// Unit list and unit costs in enumeration order, computed token by token from SPEC §1.3.
struct UnitModel {
    std::vector<li::Unit> units;
    std::vector<int64_t> cost;
};

inline UnitModel Model(const Problem &pr)
{
    UnitModel m;
    const li::SplitParams &p = pr.p;
    const int64_t qbCount = li::QBlockCount(p);
    const int64_t qBlock = li::QBlockField(p);
    for (int64_t b = 0; b < p.q.batch; ++b) {
        const int64_t s1 = li::QueryLen(p.q, pr.q, b);
        for (int64_t qb = 0; qb < qbCount; ++qb) {
            int64_t rows = 0;
            int64_t last = 0;
            const int64_t s0 = qb * qBlock;
            const int64_t end = qBlock == 0 ? s1 : std::min<int64_t>(s0 + qBlock, s1);
            for (int64_t s = s0; s < end; ++s) {
                ++rows;
                last = li::VisibleKeys(s, s1, pr.k(b), p.cmpRatio, p.sparseMode);
            }
            for (int64_t kb = 0; kb * p.kBlock < last; ++kb) {
                const int64_t keys = std::min<int64_t>(p.kBlock, last - kb * p.kBlock);
                m.units.push_back({b, qb, kb});
                m.cost.push_back(rows * (keys + std::min<int64_t>(keys, p.sparseCount)) + li::UNIT_FIXED_COST);
            }
        }
    }
    return m;
}

inline Meta Split(const Problem &pr)
{
    Meta meta;
    li::WriteSplit(pr.p, pr.q, pr.k, meta);
    return meta;
}

inline Problem RandomProblem(std::mt19937 &rng)
{
    std::uniform_int_distribution<int> bd(1, 9);
    std::uniform_int_distribution<int> wd(1, 40);
    std::uniform_int_distribution<int> s1d(0, 20);
    std::uniform_int_distribution<int> s2d(0, 20000);
    const int b = bd(rng);
    const int maxS1 = s1d(rng);
    std::vector<int32_t> s1(b), s2(b);
    for (int i = 0; i < b; ++i) {
        s1[i] = maxS1 == 0 ? 0 : std::uniform_int_distribution<int>(0, maxS1)(rng);
        s2[i] = rng() % 4 == 0 ? 0 : s2d(rng);
    }
    const int32_t cmp = 1 << (rng() % 4);
    const int32_t mode = rng() % 2 == 0 ? li::SPARSE_MODE_ALL : li::SPARSE_MODE_CAUSAL;
    return Bsnd(s1, s2, maxS1, wd(rng), mode, cmp, 1 + static_cast<int32_t>(rng() % 2048));
}

#endif  // CUSTOM_OPS_TESTS_HOST_SPLIT_FIXTURE_H
