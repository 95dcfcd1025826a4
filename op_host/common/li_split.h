// The NPU work split of the indexer (SPEC §2), written into metadata format v1.
//
// Work unit: (batch b, query block qb of NPU_Q_BLOCK tokens, key block kb of NPU_K_BLOCK keys),
// enumerated batch-major, then qb, then kb; a row (b, qb) has ceil(L_last / K) units, L_last being
// what its last token sees, so masked work is never scheduled. Worker w (one A2/A3 AI core: the
// cube computes Q·Kᵀ of the unit, its two vector cores score and select) owns a contiguous run.
//
// Cost model (what balances the run lengths): a unit costs
//     q_rows · (keys + min(keys, sparse_count)) + UNIT_FIXED_COST
// cube and vector work scale with q_rows · keys; merging the unit's sorted keys into the running
// top-k costs q_rows · min(keys, sparse_count); UNIT_FIXED_COST is the per-unit pipeline start
// (Q load, block_table reads, cross-core flags). Worker w gets the units whose cost prefix falls
// in [ceil(w·T/W), ceil((w+1)·T/W)), so every worker carries at most T/W + 1 + the largest unit,
// and one long sequence (batch 1, 128K keys) spreads over every core: the S2 split.
//
// Runs on the metadata kernel's scalar unit: no allocation, O(rows + workers), int64 throughout.
#ifndef CUSTOM_OPS_LI_SPLIT_H
#define CUSTOM_OPS_LI_SPLIT_H

#include "li_mask.h"

namespace li {

constexpr int64_t UNIT_FIXED_COST = 4 * 512;  // an eighth of a full 4 x 2048 unit

struct SplitParams {
    QueryLens q;
    int32_t maxSeqlenQ;  // static: sets the query-block count QB
    int32_t sparseCount;
    int32_t sparseMode;
    int32_t cmpRatio;
    int32_t numWorkers;  // 1..MAX_WORKERS
    int32_t qBlock;      // NPU_Q_BLOCK
    int32_t kBlock;      // NPU_K_BLOCK
};

// q_block as written in the header: 0 (one block per batch) when there are no query tokens.
LI_INLINE int32_t QBlockField(const SplitParams &p) { return p.maxSeqlenQ > 0 ? p.qBlock : 0; }
LI_INLINE int64_t QBlockCount(const SplitParams &p)
{
    return QBlockField(p) == 0 ? 1 : CeilDiv(p.maxSeqlenQ, p.qBlock);
}

// One row (b, qb) of the enumeration.
struct RowShape {
    int64_t s0;        // first query token of the block (within the batch)
    int64_t qRows;     // query tokens in the block (0: dead row)
    int64_t lastKeys;  // L of the block's last token
    int64_t units;     // ceil(lastKeys / kBlock)
};

template <typename QL, typename KL>
LI_INLINE RowShape RowOf(const SplitParams &p, const QL &qLens, const KL &kLens, int64_t b, int64_t qb)
{
    const int64_t s1 = QueryLen(p.q, qLens, b);
    const int64_t s2 = kLens(b);
    const int32_t qBlock = QBlockField(p);
    RowShape r{qb * qBlock, 0, 0, 0};
    const int64_t end = qBlock == 0 ? s1 : Min((qb + 1) * qBlock, s1);
    if (end <= r.s0) {
        return r;
    }
    r.qRows = end - r.s0;
    r.lastKeys = VisibleKeys(end - 1, s1, s2, p.cmpRatio, p.sparseMode);
    r.units = CeilDiv(r.lastKeys, p.kBlock);
    return r;
}

// Compressed keys of unit kb of a row: [kb * kBlock, kb * kBlock + UnitKeys).
LI_INLINE int64_t UnitKeys(const RowShape &r, int64_t kb, int64_t kBlock)
{
    return Clamp(r.lastKeys - kb * kBlock, 0, kBlock);
}

LI_INLINE int64_t UnitCost(int64_t qRows, int64_t keys, int64_t sparseCount)
{
    return qRows * (keys + Min(keys, sparseCount)) + UNIT_FIXED_COST;
}

// Costs of a row's full units (all but the last) and of its last unit.
struct RowCost {
    int64_t full;
    int64_t last;
    int64_t total;
};

LI_INLINE RowCost CostOf(const RowShape &r, const SplitParams &p)
{
    if (r.units == 0) {
        return {0, 0, 0};
    }
    const int64_t full = UnitCost(r.qRows, p.kBlock, p.sparseCount);
    const int64_t last = UnitCost(r.qRows, UnitKeys(r, r.units - 1, p.kBlock), p.sparseCount);
    return {full, last, (r.units - 1) * full + last};
}

struct SplitTotals {
    int64_t units;
    int64_t cost;
    int64_t maxUnitCost;
};

template <typename QL, typename KL>
LI_INLINE SplitTotals Totals(const SplitParams &p, const QL &qLens, const KL &kLens)
{
    SplitTotals t{0, 0, 0};
    const int64_t qbCount = QBlockCount(p);
    for (int64_t b = 0; b < p.q.batch; ++b) {
        for (int64_t qb = 0; qb < qbCount; ++qb) {
            const RowShape r = RowOf(p, qLens, kLens, b, qb);
            const RowCost c = CostOf(r, p);
            t.units += r.units;
            t.cost += c.total;
            t.maxUnitCost = Max(t.maxUnitCost, Max(c.full, c.last));
        }
    }
    return t;
}

// Cost prefix at which worker w's run starts.
LI_INLINE int64_t WorkerTarget(int64_t w, int64_t totalCost, int64_t workers)
{
    return CeilDiv(w * totalCost, workers);
}

// Writes the whole int32[METADATA_LEN] through `out(i, value)`; returns the totals.
template <typename QL, typename KL, typename Out>
LI_INLINE SplitTotals WriteSplit(const SplitParams &p, const QL &qLens, const KL &kLens, const Out &out)
{
    const SplitTotals t = Totals(p, qLens, kLens);
    const int64_t qbCount = QBlockCount(p);
    const int64_t workers = p.numWorkers;
    const int32_t header[HEADER_LEN] = {
        FORMAT_ID, BACKEND_NPU, p.numWorkers, QBlockField(p), p.kBlock, p.q.batch,
        static_cast<int32_t>(t.units), static_cast<int32_t>(qbCount), p.sparseCount, p.sparseMode,
        p.cmpRatio, p.q.layout, 0, 0, 0, 0};
    for (int32_t i = 0; i < HEADER_LEN; ++i) {
        out(i, header[i]);
    }
    // Worker w's first unit: (b, qb, kb) and its index in the enumeration.
    int64_t w = 0;
    int64_t prevStart = 0;
    int64_t unitBase = 0;  // units before the current row
    int64_t costBase = 0;  // cost before the current row
    for (int64_t b = 0; b < p.q.batch && w < workers; ++b) {
        for (int64_t qb = 0; qb < qbCount && w < workers; ++qb) {
            const RowShape r = RowOf(p, qLens, kLens, b, qb);
            const RowCost c = CostOf(r, p);
            while (r.units > 0 && w < workers) {
                const int64_t target = WorkerTarget(w, t.cost, workers);
                if (target > costBase + (r.units - 1) * c.full) {
                    break;
                }
                const int64_t kb = target <= costBase ? 0 : CeilDiv(target - costBase, c.full);
                const int32_t rec = HEADER_LEN + RECORD_LEN * static_cast<int32_t>(w);
                out(rec + R_BATCH, static_cast<int32_t>(b));
                out(rec + R_QBLOCK, static_cast<int32_t>(qb));
                out(rec + R_KBLOCK, static_cast<int32_t>(kb));
                if (w > 0) {
                    out(rec - RECORD_LEN + R_COUNT, static_cast<int32_t>(unitBase + kb - prevStart));
                }
                prevStart = unitBase + kb;
                ++w;
            }
            unitBase += r.units;
            costBase += c.total;
        }
    }
    // Workers left over start past the last unit: the (B, 0, 0) sentinel of metadata.compute.
    for (; w < workers; ++w) {
        const int32_t rec = HEADER_LEN + RECORD_LEN * static_cast<int32_t>(w);
        out(rec + R_BATCH, p.q.batch);
        out(rec + R_QBLOCK, 0);
        out(rec + R_KBLOCK, 0);
        if (w > 0) {
            out(rec - RECORD_LEN + R_COUNT, static_cast<int32_t>(t.units - prevStart));
        }
        prevStart = t.units;
    }
    const int32_t lastRec = HEADER_LEN + RECORD_LEN * (p.numWorkers - 1);
    out(lastRec + R_COUNT, static_cast<int32_t>(t.units - prevStart));
    for (int32_t i = HEADER_LEN + RECORD_LEN * p.numWorkers; i < METADATA_LEN; ++i) {
        out(i, 0);
    }
    return t;
}

}  // namespace li

#endif  // CUSTOM_OPS_LI_SPLIT_H
