// The indexer kernel: one AI core per worker of the metadata schedule (more workers than cores
// are taken round-robin). Three phases, separated by all-core barriers (SyncAll, batch-mode
// launch):
//   1. fill: the vector cores write -1 / -inf over every output row (rows that see nothing,
//      BSND padding, TND rows past the last length keep it);
//   2. units: the cube computes each unit's Q·Kᵀ, the vector cores score and select into a
//      running top-k per query token; a row entirely inside this worker's run is written out,
//      a row shared with other workers (S2 split) leaves its partial list in its workspace slot;
//   3. merge: the worker holding a shared row's last unit folds the participants' lists in worker
//      (= key) order and writes the row.
// Who shares what and who merges is li_schedule.h, tested on the CPU.
#ifndef CUSTOM_OPS_LI_KERNEL_H
#define CUSTOM_OPS_LI_KERNEL_H

#include "li_cube.h"
#include "li_vector.h"

namespace li_kernel {

using namespace AscendC;

struct LiArgs {
    GM_ADDR query;
    GM_ADDR key;
    GM_ADDR weights;
    GM_ADDR queryScale;
    GM_ADDR keyScale;
    GM_ADDR asq;
    GM_ADDR ask;
    GM_ADDR blockTable;
    GM_ADDR metadata;
    GM_ADDR sparseIndices;
    GM_ADDR sparseValues;
    GM_ADDR user;  // user workspace
};

template <typename QK, typename SCALE, typename ACC, int32_t LAYOUT, bool RETURN_VALUE>
class LiKernel {
public:
    static constexpr bool INT8_PATH = IsSameType<QK, int8_t>::value;

    __aicore__ inline void Init(const LiArgs &args, const VllmQuantLightningIndexerTilingData *t, int64_t numBlocks)
    {
        t_ = t;
        const int64_t maxKeys = static_cast<int64_t>(t->maxBlocksPerSeq) * t->blockSize * t->cmpRatio;
        qLens_ = {reinterpret_cast<__gm__ int32_t *>(args.asq), t->queryRows};
        kLens_ = {reinterpret_cast<__gm__ int32_t *>(args.ask), maxKeys};
        meta_ = {reinterpret_cast<__gm__ int32_t *>(args.metadata)};
        // The scalar unit reads lengths, block_table and metadata through the data cache; drop any
        // line a previous kernel on this core left, since the metadata kernel wrote them since.
        GlobalTensor<int32_t> scalarInputs;
        scalarInputs.SetGlobalBuffer(meta_.ptr, li::METADATA_LEN);
        DataCacheCleanAndInvalid<int32_t, CacheLine::ENTIRE_DATA_CACHE>(scalarInputs);
        usable_ = MetadataUsable(meta_, {t->batch, t->sparseCount, t->sparseMode, t->cmpRatio, LAYOUT, t->aicNum});
        params_ = {{LAYOUT, static_cast<int32_t>(t->queryLenCount), static_cast<int32_t>(t->batch),
                    static_cast<int32_t>(t->queryRows)},
                   0, static_cast<int32_t>(t->sparseCount), static_cast<int32_t>(t->sparseMode),
                   static_cast<int32_t>(t->cmpRatio), 1, li::NPU_Q_BLOCK, li::NPU_K_BLOCK};
        if (usable_) {
            params_.numWorkers = static_cast<int32_t>(meta_(li::F_WORKERS));
            params_.maxSeqlenQ = meta_(li::F_QBLOCK) == 0 ? 0 : static_cast<int32_t>(meta_(li::F_QBLOCKS)) * li::NPU_Q_BLOCK;
            // the records too: a schedule of other lengths would walk rows past the batch
            usable_ = li::RecordsCoverUnits(params_, qLens_, kLens_, meta_);
        }
        indices_.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t *>(args.sparseIndices));
        values_.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(args.sparseValues));
        const int64_t aic = AiCoreIdx();
        GlobalTensor<ACC> mm;
        mm.SetGlobalBuffer(reinterpret_cast<__gm__ ACC *>(args.user + t->mm1Offset) + aic * 2 * li::CUBE_M * li::S2_SUBTILE);
        partial_.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(args.user + t->partialOffset));
        if ASCEND_IS_AIC {
            cube_.Init(&pipe_, reinterpret_cast<__gm__ QK *>(args.query), reinterpret_cast<__gm__ QK *>(args.key),
                       reinterpret_cast<__gm__ int32_t *>(args.blockTable), mm, t->blockSize, t->keyBlockStride,
                       t->maxBlocksPerSeq, numBlocks);
        } else {
            // Phase 1 runs before the vector buffers exist: InitGlobalMemory stages its fill value
            // in the UB that the pipe has not allocated.
            FillOutputs();
            typename LiVector<SCALE, ACC, INT8_PATH>::Gm gm{
                reinterpret_cast<__gm__ SCALE *>(args.weights), reinterpret_cast<__gm__ SCALE *>(args.queryScale),
                reinterpret_cast<__gm__ SCALE *>(args.keyScale), reinterpret_cast<__gm__ int32_t *>(args.blockTable), mm,
                partial_};
            vec_.Init(&pipe_, gm, t->vecKeys, t->sparseCount, t->blockSize, t->keyScaleBlockStride, t->maxBlocksPerSeq,
                      numBlocks);
        }
    }

    __aicore__ inline void Process()
    {
        if ASCEND_IS_AIV {
            vec_.Start();
        }
        SyncAll<false>();  // phase 1 (the fill, in Init) is done everywhere
        const int64_t cores = GetBlockNum();
        const int64_t self = AiCoreIdx();
        for (int64_t w = self; usable_ && w < params_.numWorkers; w += cores) {
            RunWorker(w);
        }
        if ASCEND_IS_AIC {
            cube_.Finish();
        }
        SyncAll<false>();
        if ASCEND_IS_AIV {
            for (int64_t w = self; usable_ && w < params_.numWorkers; w += cores) {
                MergeHeadRow(w);
            }
        }
    }

private:
    // Phase 1, on all vector cores: sparse_indices = -1, sparse_values = -inf.
    __aicore__ inline void FillOutputs()
    {
        const int64_t rows = t_->outputRows;
        const li::RowRange r = li::FillRows(rows, GetBlockIdx(), GetBlockNum() * li::VEC_CORES_PER_AIC);
        const int64_t k = t_->sparseCount;
        if (r.end > r.begin) {
            GlobalTensor<int32_t> indices = indices_[r.begin * k];
            InitGlobalMemory(indices, (r.end - r.begin) * k, li::INVALID_INDEX);
            if constexpr (RETURN_VALUE) {
                GlobalTensor<float> values = values_[r.begin * k];
                InitGlobalMemory(values, (r.end - r.begin) * k, -__builtin_inff());
            }
        }
        PipeBarrier<PIPE_ALL>();
    }

    // Phase 2 for worker w.
    __aicore__ inline void RunWorker(int64_t w)
    {
        const li::WorkerRun run = li::RunOf(params_, qLens_, kLens_, meta_, w);
        li::Unit u = run.first;
        for (int64_t n = 0; n < run.count; ++n) {
            const li::RowShape row = li::RowOf(params_, qLens_, kLens_, u.b, u.qb);
            const int64_t keys = li::UnitKeys(row, u.kb, li::NPU_K_BLOCK);
            const int64_t qRow0 = QueryRow(u.b, row.s0);
            if ASCEND_IS_AIC {
                cube_.ComputeUnit(qRow0, row.qRows, u.b, u.kb, keys);
            } else {
                vec_.ScoreUnit(qRow0, row.qRows, u.b, u.kb, keys);
                const bool rowStart = n == 0 || u.kb == 0;
                const bool rowEnd = n + 1 == run.count || u.kb + 1 == row.units;
                SelectAndFinish(run, w, u, row, rowStart, rowEnd);
            }
            u = li::Advance(params_, qLens_, kLens_, u, 1);
        }
    }

    __aicore__ inline void SelectAndFinish(const li::WorkerRun &run, int64_t w, const li::Unit &u,
                                           const li::RowShape &row, bool rowStart, bool rowEnd)
    {
        int64_t t0 = 0;
        int64_t t1 = 0;
        vec_.Tokens(row.qRows, t0, t1);
        const int64_t s1 = li::QueryLen(params_.q, qLens_, u.b);
        const int64_t s2 = kLens_(u.b);
        const bool shared = (li::SameRow(u, run.first) && run.headShared) || (li::SameRow(u, run.last) && run.tailShared);
        for (int64_t t = t0; t < t1; ++t) {
            const int64_t s = row.s0 + t;
            const int64_t seen = li::VisibleKeys(s, s1, s2, params_.cmpRatio, params_.sparseMode);
            const int64_t visible = li::Clamp(seen - u.kb * li::NPU_K_BLOCK, 0, li::NPU_K_BLOCK);
            vec_.SelectUnit(t - t0, u.kb, visible, rowStart);
            if (!rowEnd) {
                continue;
            }
            if (shared) {
                vec_.StorePartial(t - t0, Slot(w, li::PartialSlot(run, u), t));
            } else {
                WriteToken(t - t0, u.b, s, li::ValidCount(seen, params_.sparseCount));
            }
        }
    }

    // Phase 3: fold the partial lists of worker w's head row if w holds its last unit.
    __aicore__ inline void MergeHeadRow(int64_t w)
    {
        const li::WorkerRun run = li::RunOf(params_, qLens_, kLens_, meta_, w);
        if (!li::MergesHeadRow(run)) {
            return;
        }
        const li::RowShape row = li::RowOf(params_, qLens_, kLens_, run.first.b, run.first.qb);
        const int64_t first = li::FirstParticipant(params_, qLens_, kLens_, meta_, w);
        int64_t t0 = 0;
        int64_t t1 = 0;
        vec_.Tokens(row.qRows, t0, t1);
        const int64_t s1 = li::QueryLen(params_.q, qLens_, run.first.b);
        const int64_t s2 = kLens_(run.first.b);
        for (int64_t t = t0; t < t1; ++t) {
            bool firstList = true;
            for (int64_t v = first; v <= w; ++v) {
                const li::WorkerRun part = li::RunOf(params_, qLens_, kLens_, meta_, v);
                if (part.count == 0) {
                    continue;
                }
                vec_.FoldPartial(t - t0, Slot(v, li::PartialSlot(part, run.first), t), firstList);
                firstList = false;
            }
            const int64_t s = row.s0 + t;
            const int64_t seen = li::VisibleKeys(s, s1, s2, params_.cmpRatio, params_.sparseMode);
            WriteToken(t - t0, run.first.b, s, li::ValidCount(seen, params_.sparseCount));
        }
    }

    __aicore__ inline void WriteToken(int64_t slot, int64_t b, int64_t s, int64_t valid)
    {
        const int64_t outRow = QueryRow(b, s);
        if (outRow < 0 || outRow >= t_->outputRows) {
            return;
        }
        const int64_t off = outRow * t_->sparseCount;
        vec_.WriteRow(slot, valid, indices_[off], values_[RETURN_VALUE ? off : 0], RETURN_VALUE);
    }

    // Output / query row of token s of batch b.
    __aicore__ inline int64_t QueryRow(int64_t b, int64_t s) const { return li::QueryRow0(params_.q, qLens_, b) + s; }

    // Worker w's partial slot for token t of a shared row: [slot][token] lists of PaddedK pairs.
    __aicore__ inline GlobalTensor<float> Slot(int64_t w, int64_t slot, int64_t t) const
    {
        const int64_t pairs = vec_.PaddedK() * 2;
        return partial_[((w * li::PARTIAL_SLOTS + slot) * li::NPU_Q_BLOCK + t) * pairs];
    }

    const VllmQuantLightningIndexerTilingData *t_ = nullptr;
    TPipe pipe_;
    LiCube<QK, ACC> cube_;
    LiVector<SCALE, ACC, INT8_PATH> vec_;
    GmLens qLens_{};
    GmLens kLens_{};
    GmMeta meta_{};
    li::SplitParams params_{};
    bool usable_ = false;
    GlobalTensor<int32_t> indices_;
    GlobalTensor<float> values_;
    GlobalTensor<float> partial_;
};

}  // namespace li_kernel

#endif  // CUSTOM_OPS_LI_KERNEL_H
