// How a worker walks its run of the split and who merges a row's partial top-k lists.
//
// A row (b, qb) whose units span several workers is an S2 split: each participant leaves its
// partial top-k list (per query token) in its workspace slot, slot 0 for its first row and slot 1
// for its last; after the all-core barrier the worker holding the row's last unit folds the
// participants' lists in worker order, which is key order, so "earlier list wins a tie" is SPEC's
// "smaller index wins" (see li_topk.h).
#ifndef CUSTOM_OPS_LI_SCHEDULE_H
#define CUSTOM_OPS_LI_SCHEDULE_H

#include "li_split.h"

namespace li {

struct Unit {
    int64_t b;
    int64_t qb;
    int64_t kb;
};

struct WorkerRun {
    Unit first;
    Unit last;
    int64_t count;
    bool headShared;  // the first row began on an earlier worker
    bool tailShared;  // the last row continues on a later worker
};

template <typename Meta>
LI_INLINE Unit RecordUnit(const Meta &meta, int64_t w)
{
    const int64_t rec = HEADER_LEN + RECORD_LEN * w;
    return {meta(rec + R_BATCH), meta(rec + R_QBLOCK), meta(rec + R_KBLOCK)};
}

template <typename Meta>
LI_INLINE int64_t RecordCount(const Meta &meta, int64_t w)
{
    return meta(HEADER_LEN + RECORD_LEN * w + R_COUNT);
}

LI_INLINE bool SameRow(const Unit &a, const Unit &b) { return a.b == b.b && a.qb == b.qb; }

// Moves u to the first unit of the next row that has units; false past the last batch.
template <typename QL, typename KL>
LI_INLINE bool NextRow(const SplitParams &p, const QL &qLens, const KL &kLens, Unit &u)
{
    const int64_t qbCount = QBlockCount(p);
    for (;;) {
        ++u.qb;
        if (u.qb == qbCount) {
            u.qb = 0;
            ++u.b;
        }
        if (u.b >= p.q.batch) {
            return false;
        }
        u.kb = 0;
        if (RowOf(p, qLens, kLens, u.b, u.qb).units > 0) {
            return true;
        }
    }
}

// The unit `steps` units after u (row jumps, not unit steps: O(rows)).
template <typename QL, typename KL>
LI_INLINE Unit Advance(const SplitParams &p, const QL &qLens, const KL &kLens, Unit u, int64_t steps)
{
    for (;;) {
        const int64_t left = RowOf(p, qLens, kLens, u.b, u.qb).units - 1 - u.kb;
        if (steps <= left) {
            u.kb += steps;
            return u;
        }
        steps -= left + 1;
        if (!NextRow(p, qLens, kLens, u)) {
            return u;
        }
    }
}

template <typename QL, typename KL, typename Meta>
LI_INLINE WorkerRun RunOf(const SplitParams &p, const QL &qLens, const KL &kLens, const Meta &meta, int64_t w)
{
    WorkerRun run{RecordUnit(meta, w), RecordUnit(meta, w), RecordCount(meta, w), false, false};
    if (run.count == 0) {
        return run;
    }
    run.last = Advance(p, qLens, kLens, run.first, run.count - 1);
    run.headShared = run.first.kb > 0;
    run.tailShared = run.last.kb + 1 < RowOf(p, qLens, kLens, run.last.b, run.last.qb).units;
    return run;
}

// Slot of worker w's partial list for `row`: 0 for its first row, 1 for its last.
LI_INLINE int32_t PartialSlot(const WorkerRun &run, const Unit &row) { return SameRow(run.first, row) ? 0 : 1; }

// Whether worker w merges its head row: the row began earlier and ends inside w's run.
LI_INLINE bool MergesHeadRow(const WorkerRun &run)
{
    return run.count > 0 && run.headShared && !(SameRow(run.first, run.last) && run.tailShared);
}

// First worker holding part of worker w's head row (w itself when the row is not shared).
template <typename QL, typename KL, typename Meta>
LI_INLINE int64_t FirstParticipant(const SplitParams &p, const QL &qLens, const KL &kLens, const Meta &meta,
                                   int64_t w)
{
    const Unit row = RecordUnit(meta, w);
    int64_t first = w;
    for (int64_t v = w - 1; v >= 0; --v) {
        const WorkerRun prev = RunOf(p, qLens, kLens, meta, v);
        if (prev.count == 0) {
            continue;
        }
        if (!SameRow(prev.last, row)) {
            break;
        }
        first = v;
        if (!prev.headShared || !SameRow(prev.first, row)) {
            break;
        }
    }
    return first;
}

}  // namespace li

#endif  // CUSTOM_OPS_LI_SCHEDULE_H
