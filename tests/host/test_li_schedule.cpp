// Who shares a row, which slot holds its partial list, and who merges it.
#include <algorithm>
#include <string>

#include "check.h"
#include "split_fixture.h"

TEST(unshared_rows_have_no_merger)
{
    const Problem pr = Bsnd({4, 4}, {100, 100}, 4, 2);
    const Meta meta = Split(pr);
    for (int32_t w = 0; w < 2; ++w) {
        const li::WorkerRun run = li::RunOf(pr.p, pr.q, pr.k, meta, w);
        CHECK_EQ(run.count, 1);
        CHECK(!run.headShared);
        CHECK(!run.tailShared);
        CHECK(!li::MergesHeadRow(run));
        CHECK_EQ(li::FirstParticipant(pr.p, pr.q, pr.k, meta, w), w);
    }
}

TEST(long_row_is_merged_by_its_last_worker_from_every_participant)
{
    const Problem pr = Bsnd({1}, {131072}, 1, 24);
    const Meta meta = Split(pr);
    for (int32_t w = 0; w < 24; ++w) {
        const li::WorkerRun run = li::RunOf(pr.p, pr.q, pr.k, meta, w);
        CHECK_EQ(run.headShared, w > 0);
        CHECK_EQ(run.tailShared, w < 23);
        CHECK_EQ(li::MergesHeadRow(run), w == 23);
        CHECK_EQ(li::PartialSlot(run, run.first), 0);
    }
    CHECK_EQ(li::FirstParticipant(pr.p, pr.q, pr.k, meta, 23), 0);
}

TEST(every_shared_row_has_exactly_one_merger_random)
{
    std::mt19937 rng(7);
    for (int i = 0; i < 300; ++i) {
        const Problem pr = RandomProblem(rng);
        const Meta meta = Split(pr);
        // Count, per row, how many workers hold a piece of it and how many merge it.
        std::vector<int> holders(pr.p.q.batch * li::QBlockCount(pr.p), 0);
        std::vector<int> mergers(holders.size(), 0);
        for (int32_t w = 0; w < pr.p.numWorkers; ++w) {
            const li::WorkerRun run = li::RunOf(pr.p, pr.q, pr.k, meta, w);
            if (run.count == 0) {
                continue;
            }
            li::Unit u = run.first;
            int64_t lastRow = -1;
            for (int64_t n = 0; n < run.count; ++n) {
                const int64_t row = u.b * li::QBlockCount(pr.p) + u.qb;
                holders[row] += row != lastRow ? 1 : 0;
                lastRow = row;
                u = li::Advance(pr.p, pr.q, pr.k, u, 1);
            }
            if (li::MergesHeadRow(run)) {
                const int64_t row = run.first.b * li::QBlockCount(pr.p) + run.first.qb;
                ++mergers[row];
                // Participants: contiguous workers [first, w] that hold the row, counted once each.
                const int64_t first = li::FirstParticipant(pr.p, pr.q, pr.k, meta, w);
                CHECK(first < w);
                CHECK(li::SameRow(li::RecordUnit(meta, first), run.first) ||
                      li::SameRow(li::RunOf(pr.p, pr.q, pr.k, meta, first).last, run.first));
            }
        }
        for (size_t r = 0; r < holders.size(); ++r) {
            CHECK_MSG(mergers[r] == (holders[r] > 1 ? 1 : 0),
                      "case " + std::to_string(i) + " row " + std::to_string(r));
        }
    }
}

// The kernel walks the records only if they split this call's units (li::RecordsCoverUnits).
TEST(every_split_covers_its_own_units_random)
{
    std::mt19937 rng(11);
    for (int i = 0; i < 300; ++i) {
        const Problem pr = RandomProblem(rng);
        CHECK_MSG(li::RecordsCoverUnits(pr.p, pr.q, pr.k, Split(pr)), "case " + std::to_string(i));
    }
}

TEST(a_split_of_other_lengths_is_refused)
{
    // metadata of a step with long rows, run with shorter ones (the runs would pass the batch)
    const Problem then = Bsnd({1, 1}, {60000, 60000}, 1, 24);
    const Problem now = Bsnd({1, 1}, {3000, 3000}, 1, 24);
    CHECK(!li::RecordsCoverUnits(now.p, now.q, now.k, Split(then)));
    // and the other way: rows that grew would leave keys unscored
    CHECK(!li::RecordsCoverUnits(then.p, then.q, then.k, Split(now)));
    // random: refused exactly when a row's unit count changed (a row without query tokens, or a
    // few more keys inside its last key block, leaves the split valid)
    std::mt19937 rng(12);
    int refused = 0;
    for (int i = 0; i < 300; ++i) {
        const Problem a = RandomProblem(rng);
        Problem b = a;
        b.k.v[rng() % b.k.v.size()] += static_cast<int32_t>(rng() % (3 * 2048 * 8));
        const auto ua = Model(a).units;
        const auto ub = Model(b).units;
        const bool same = ua.size() == ub.size() &&
                          std::equal(ua.begin(), ua.end(), ub.begin(), [](const li::Unit &x, const li::Unit &y) {
                              return x.b == y.b && x.qb == y.qb && x.kb == y.kb;
                          });
        const bool covers = li::RecordsCoverUnits(b.p, b.q, b.k, Split(a));
        CHECK_MSG(covers == same, "case " + std::to_string(i));
        refused += covers ? 0 : 1;
    }
    CHECK(refused > 100);
}

TEST(corrupt_records_are_refused)
{
    const Problem pr = Bsnd({4, 3, 4}, {9000, 5000, 7000}, 4, 6);
    const Meta good = Split(pr);
    CHECK(li::RecordsCoverUnits(pr.p, pr.q, pr.k, good));
    const int32_t rec1 = li::HEADER_LEN + li::RECORD_LEN;  // worker 1's record
    const std::vector<std::pair<int32_t, int32_t>> edits = {
        {rec1 + li::R_COUNT, -1},          // a negative count
        {rec1 + li::R_COUNT, 1 << 30},     // a run past the last unit
        {rec1 + li::R_BATCH, 3},           // a batch past B
        {rec1 + li::R_BATCH, -1},          // a negative batch
        {rec1 + li::R_QBLOCK, 1},          // a query block past QB (one block of 4 tokens)
        {rec1 + li::R_KBLOCK, 1000},       // a key block past its row
        {rec1 + li::R_KBLOCK, -1},         // a negative key block
        {li::HEADER_LEN + li::R_KBLOCK, 1},  // worker 0 does not start at unit 0
    };
    for (const auto &[at, value] : edits) {
        Meta bad = good;
        bad.v[at] = value;
        CHECK_MSG(!li::RecordsCoverUnits(pr.p, pr.q, pr.k, bad), "edit at " + std::to_string(at));
    }
}

TEST(many_declared_query_blocks_walk_only_live_rows)
{
    // Query blocks past every sequence's last token have no units: a split made for a short
    // max_seqlen_q is also a split of the same call under a huge one, and checking it must not
    // walk the huge count of empty rows.
    const Problem pr = Bsnd({3, 0, 4}, {5000, 70, 9000}, 4, 8);
    Problem huge = pr;
    huge.p.maxSeqlenQ = static_cast<int32_t>(li::MAX_Q_BLOCKS * li::NPU_Q_BLOCK);
    CHECK(li::RecordsCoverUnits(huge.p, huge.q, huge.k, Split(pr)));
}

TEST(too_few_declared_query_blocks_are_refused)
{
    // a split made for 4 query tokens per sequence, run with a sequence of 12: its later query
    // blocks would hold tokens no unit names (they would come back -1)
    const Problem made = Bsnd({4, 4}, {5000, 5000}, 4, 6);
    const Problem now = Bsnd({4, 12}, {5000, 5000}, 12, 6);
    Problem declared = now;
    declared.p.maxSeqlenQ = made.p.maxSeqlenQ;  // the kernel takes max_seqlen_q from the header
    CHECK(!li::RecordsCoverUnits(declared.p, declared.q, declared.k, Split(made)));
    CHECK(li::RecordsCoverUnits(now.p, now.q, now.k, Split(now)));
}

TEST(tnd_splits_cover_their_own_units_random)
{
    std::mt19937 rng(13);
    for (int i = 0; i < 300; ++i) {
        const int b = 1 + static_cast<int>(rng() % 6);
        std::vector<int32_t> ends(b), s2(b);
        int32_t total = 0;
        for (int j = 0; j < b; ++j) {
            total += static_cast<int32_t>(rng() % 40);
            ends[j] = total;
            s2[j] = static_cast<int32_t>(rng() % 20000);
        }
        const bool leading_zero = rng() % 2 == 0;
        std::vector<int32_t> q = ends;
        if (leading_zero) {
            q.insert(q.begin(), 0);
        }
        Problem pr{{{li::LAYOUT_TND, static_cast<int32_t>(q.size()), b, 0}, std::max(total, 1), 2048,
                    li::SPARSE_MODE_CAUSAL, 1, 1 + static_cast<int32_t>(rng() % 30), li::NPU_Q_BLOCK,
                    li::NPU_K_BLOCK},
                   {q},
                   {s2}};
        const Meta meta = Split(pr);
        CHECK_MSG(li::RecordsCoverUnits(pr.p, pr.q, pr.k, meta), "case " + std::to_string(i));
        Problem longer = pr;
        longer.k.v[rng() % b] += 3 * 2048;  // three more key blocks: refused when the row has tokens
        const auto ua = Model(pr).units.size();
        const auto ub = Model(longer).units.size();
        CHECK_MSG(li::RecordsCoverUnits(longer.p, longer.q, longer.k, meta) == (ua == ub),
                  "case " + std::to_string(i) + " longer");
    }
}
