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

// Moves (b, qb) to the next row in enumeration order. A batch's query blocks past its last token
// have no units, so the walk jumps from the first of them to the next batch: walking the rows
// costs O(B + live rows) however many query blocks the metadata declares. False when the
// declared blocks end before the batch's tokens do (tokens no unit could hold).
template <typename QL>
LI_INLINE bool NextRowIndex(const SplitParams &p, const QL &qLens, int64_t qbCount, int64_t &b, int64_t &qb)
{
    const int64_t qBlock = QBlockField(p);
    const int64_t tokens = QueryLen(p.q, qLens, b);
    ++qb;
    if (qBlock > 0 && qb == qbCount && qb * qBlock < tokens) {
        return false;
    }
    if (qb == qbCount || (qBlock > 0 && qb * qBlock >= tokens)) {
        qb = 0;
        ++b;
    }
    return true;
}

// Moves past row (b, qb), adding its units to rowStart, and reads the next row's units (0 past
// the batch). False as NextRowIndex.
template <typename QL, typename KL>
LI_INLINE bool PassRow(const SplitParams &p, const QL &qLens, const KL &kLens, int64_t qbCount, int64_t &b,
                       int64_t &qb, int64_t &rowStart, int64_t &rowUnits)
{
    rowStart += rowUnits;
    if (!NextRowIndex(p, qLens, qbCount, b, qb)) {
        return false;
    }
    rowUnits = b < p.q.batch ? RowOf(p, qLens, kLens, b, qb).units : 0;
    return true;
}

// Whether the worker records of `meta` split exactly this call's units: walked in worker order,
// the non-empty runs start at unit 0, each where the previous one ended, inside a row that has
// units, and together end at the last unit; and the declared query blocks hold every token.
// Only then is walking them (RunOf, Advance) safe and complete: metadata computed for other
// lengths (a stale step's) or corrupted could name rows past the batch or runs past the last
// unit, or leave tokens out. One pass over the live rows and the records.
template <typename QL, typename KL, typename Meta>
LI_INLINE bool RecordsCoverUnits(const SplitParams &p, const QL &qLens, const KL &kLens, const Meta &meta)
{
    const int64_t qbCount = QBlockCount(p);
    int64_t b = 0;
    int64_t qb = 0;
    int64_t rowStart = 0;  // position of row (b, qb)'s first unit
    int64_t rowUnits = p.q.batch > 0 ? RowOf(p, qLens, kLens, 0, 0).units : 0;
    int64_t next = 0;  // position where the next non-empty run must start
    for (int64_t w = 0; w < p.numWorkers; ++w) {
        const int64_t count = RecordCount(meta, w);
        if (count < 0) {
            return false;
        }
        if (count == 0) {
            continue;
        }
        const Unit u = RecordUnit(meta, w);
        if (u.b < b || u.b >= p.q.batch || u.qb < 0 || u.qb >= qbCount || (u.b == b && u.qb < qb)) {
            return false;  // outside the call, or behind the rows already passed
        }
        while (b < u.b || (b == u.b && qb < u.qb)) {  // b <= u.b < B: every row read exists
            if (!PassRow(p, qLens, kLens, qbCount, b, qb, rowStart, rowUnits)) {
                return false;
            }
        }
        if (b != u.b || qb != u.qb || u.kb < 0 || u.kb >= rowUnits || rowStart + u.kb != next) {
            return false;
        }
        next += count;
    }
    while (b < p.q.batch) {  // to the end: rowStart becomes the call's unit count
        if (!PassRow(p, qLens, kLens, qbCount, b, qb, rowStart, rowUnits)) {
            return false;
        }
    }
    return next == rowStart;
}

}  // namespace li

#endif  // CUSTOM_OPS_LI_SCHEDULE_H
