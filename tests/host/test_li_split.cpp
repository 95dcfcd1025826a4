// The metadata split: header, exact coverage, cost-model balance, zero lengths, TND forms, S2 split.
#include <algorithm>
#include <string>

#include "check.h"
#include "split_fixture.h"

namespace {

// Units of every worker, walked through the records the way the kernel walks them.
std::vector<std::vector<li::Unit>> WalkWorkers(const Problem &pr, const Meta &meta)
{
    std::vector<std::vector<li::Unit>> out(pr.p.numWorkers);
    for (int32_t w = 0; w < pr.p.numWorkers; ++w) {
        li::Unit u = li::RecordUnit(meta, w);
        const int64_t count = li::RecordCount(meta, w);
        for (int64_t i = 0; i < count; ++i) {
            out[w].push_back(u);
            u = li::Advance(pr.p, pr.q, pr.k, u, 1);
        }
    }
    return out;
}

bool SameUnit(const li::Unit &a, const li::Unit &b) { return a.b == b.b && a.qb == b.qb && a.kb == b.kb; }

void CheckCoverageAndBalance(const Problem &pr, const std::string &tag)
{
    const Meta meta = Split(pr);
    const UnitModel m = Model(pr);
    const auto walked = WalkWorkers(pr, meta);
    // Every unit exactly once, in enumeration order: the concatenated runs are the unit list.
    std::vector<li::Unit> all;
    for (const auto &w : walked) {
        all.insert(all.end(), w.begin(), w.end());
    }
    CHECK_EQ(all.size(), m.units.size());
    for (size_t i = 0; i < std::min(all.size(), m.units.size()); ++i) {
        CHECK_MSG(SameUnit(all[i], m.units[i]), tag + " unit " + std::to_string(i));
    }
    CHECK_EQ(meta(li::F_UNITS), static_cast<int64_t>(m.units.size()));
    // Balance: each worker's cost is at most T / W + 1 + the largest unit.
    int64_t total = 0;
    int64_t largest = 0;
    for (int64_t c : m.cost) {
        total += c;
        largest = std::max(largest, c);
    }
    size_t u = 0;
    for (const auto &w : walked) {
        int64_t load = 0;
        for (size_t i = 0; i < w.size(); ++i, ++u) {
            load += m.cost[u];
        }
        CHECK_MSG(load <= total / pr.p.numWorkers + 1 + largest, tag + " load " + std::to_string(load));
    }
    // Records past the last worker are zero; the meta array is fully written.
    for (int32_t i = 0; i < li::METADATA_LEN; ++i) {
        CHECK_MSG(meta.v[i] != -7, tag + " unwritten " + std::to_string(i));
    }
}

}  // namespace

TEST(header_is_metadata_format_v1)
{
    const Problem pr = Bsnd({4, 4}, {512, 9000}, 4, 24, li::SPARSE_MODE_CAUSAL, 4, 512);
    const Meta meta = Split(pr);
    CHECK_EQ(meta(li::F_FORMAT), li::FORMAT_ID);
    CHECK_EQ(meta(li::F_BACKEND), li::BACKEND_NPU);
    CHECK_EQ(meta(li::F_WORKERS), 24);
    CHECK_EQ(meta(li::F_QBLOCK), 4);
    CHECK_EQ(meta(li::F_KBLOCK), 2048);
    CHECK_EQ(meta(li::F_BATCH), 2);
    CHECK_EQ(meta(li::F_QBLOCKS), 1);
    CHECK_EQ(meta(li::F_SPARSE_COUNT), 512);
    CHECK_EQ(meta(li::F_SPARSE_MODE), 3);
    CHECK_EQ(meta(li::F_CMP_RATIO), 4);
    CHECK_EQ(meta(li::F_LAYOUT), li::LAYOUT_BSND);
    CHECK_EQ(meta(li::F_UNITS), 1 + 2);  // 128 keys, then 2250 keys
}

TEST(every_unit_exactly_once_and_balanced_random)
{
    std::mt19937 rng(20261129);
    for (int i = 0; i < 400; ++i) {
        CheckCoverageAndBalance(RandomProblem(rng), "random#" + std::to_string(i));
    }
}

TEST(zero_lengths_give_empty_schedule)
{
    const Problem pr = Bsnd({0, 0, 0}, {0, 100, 0}, 4, 24);
    const Meta meta = Split(pr);
    CHECK_EQ(meta(li::F_UNITS), 0);
    for (int32_t w = 0; w < 24; ++w) {
        CHECK_EQ(li::RecordCount(meta, w), 0);
        CHECK_EQ(li::RecordUnit(meta, w).b, 3);  // the (B, 0, 0) sentinel of metadata.compute
    }
    CheckCoverageAndBalance(Bsnd({4, 0, 4}, {0, 5000, 0}, 4, 7), "zero-mix");
    CheckCoverageAndBalance(Bsnd({0}, {0}, 0, 1), "max_seqlen_q 0");
}

TEST(max_seqlen_q_zero_writes_q_block_zero)
{
    const Meta meta = Split(Bsnd({0, 0}, {100, 100}, 0, 4));
    CHECK_EQ(meta(li::F_QBLOCK), 0);
    CHECK_EQ(meta(li::F_QBLOCKS), 1);
}

TEST(tnd_b_plus_one_form_gives_same_schedule)
{
    const std::vector<int32_t> s2 = {70000, 3000, 0, 128000};
    Problem b{{{li::LAYOUT_TND, 4, 4, 0}, 9, 2048, 3, 4, 24, li::NPU_Q_BLOCK, li::NPU_K_BLOCK}, {{9, 9, 12, 21}}, {s2}};
    Problem b1 = b;
    b1.p.q.count = 5;
    b1.q.v = {0, 9, 9, 12, 21};
    const Meta m = Split(b);
    const Meta m1 = Split(b1);
    CHECK(m.v == m1.v);
    CHECK_EQ(m(li::F_LAYOUT), li::LAYOUT_TND);
    CheckCoverageAndBalance(b, "tnd");
    CheckCoverageAndBalance(b1, "tnd+1");
}

TEST(batch_one_long_context_uses_every_core)
{
    // The published op gives a batch to a core; the S2 split spreads 64 key blocks over 24 cores.
    const Problem pr = Bsnd({1}, {131072}, 1, 24);
    const Meta meta = Split(pr);
    CHECK_EQ(meta(li::F_UNITS), 64);
    for (int32_t w = 0; w < 24; ++w) {
        const int64_t n = li::RecordCount(meta, w);
        CHECK_MSG(n == 2 || n == 3, "worker " + std::to_string(w) + " count " + std::to_string(n));
    }
    CheckCoverageAndBalance(pr, "b1-128k");
}

TEST(cost_model_weights_rows_and_keys)
{
    // A full 4-token unit outweighs a 1-token unit of the same keys; a tail unit is cheaper.
    CHECK(li::UnitCost(4, 2048, 2048) > li::UnitCost(1, 2048, 2048));
    CHECK(li::UnitCost(4, 100, 2048) < li::UnitCost(4, 2048, 2048));
    CHECK_EQ(li::UnitCost(0, 0, 2048), li::UNIT_FIXED_COST);
    // Decode batch of unequal lengths: long sequences are split, short ones grouped.
    CheckCoverageAndBalance(Bsnd({1, 1, 1, 1}, {131072, 100, 200, 65536}, 1, 24), "ragged decode");
}

TEST(more_workers_than_units_leaves_trailing_workers_empty)
{
    const Problem pr = Bsnd({1}, {3000}, 1, 24);
    const Meta meta = Split(pr);
    int64_t busy = 0;
    for (int32_t w = 0; w < 24; ++w) {
        busy += li::RecordCount(meta, w) > 0 ? 1 : 0;
    }
    CHECK_EQ(busy, 2);
    CheckCoverageAndBalance(pr, "few units");
}

TEST(prefill_many_query_blocks)
{
    CheckCoverageAndBalance(Bsnd({4096, 1000}, {4096, 9000}, 4096, 24, li::SPARSE_MODE_CAUSAL, 1), "prefill");
    CheckCoverageAndBalance(Bsnd({4096}, {4096}, 4096, 252, li::SPARSE_MODE_CAUSAL, 4), "252 workers");
}
