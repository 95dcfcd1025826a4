// Who shares a row, which slot holds its partial list, and who merges it.
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
