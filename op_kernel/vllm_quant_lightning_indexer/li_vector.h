// Vector service of the indexer (one of the two vector cores of an AI core; core v scores query
// tokens 2v and 2v + 1 of every unit):
//   score[j] = kscale[j] · Σ_g (w[g]·qscale[g]) · ReLU(q[g]·k[j])
// from the cube's sub-tiles, SPEC §1.3 masks as -inf, a full Sort of the unit's keys in index
// order, and a MrgSort into the running top-k list, running list first. The Sort/MrgSort API
// keeps equal scores in input order, so ties go to the smaller index (li_topk.h explains why).
// On A2/A3 the arithmetic is that of the golden's ascend_a3 mode: w·qscale and ReLU(dot / 1024)
// rounded to float16, the head sum in float32, then times kscale · 1024.
#ifndef CUSTOM_OPS_LI_VECTOR_H
#define CUSTOM_OPS_LI_VECTOR_H

#include "li_gm.h"
#include "li_tiling_math.h"
#include "li_topk.h"

namespace li_kernel {

using namespace AscendC;

template <typename SCALE, typename ACC, bool INT8_PATH>
class LiVector {
public:
    static constexpr int64_t K = li::NPU_K_BLOCK;
    static constexpr float NEG_INF = -__builtin_inff();

    struct Gm {
        __gm__ SCALE *weights;
        __gm__ SCALE *queryScale;
        __gm__ SCALE *keyScale;
        __gm__ int32_t *blockTable;
        GlobalTensor<ACC> mm;       // this AI core's two Q·Kᵀ sub-tile buffers
        GlobalTensor<float> partial; // this AI core's partial top-k slots (all workers, see Slot)
    };

    __aicore__ inline void Init(TPipe *pipe, const Gm &gm, int64_t vecKeys, int64_t sparseCount, int64_t blockSize,
                                int64_t keyScaleBlockStride, int64_t maxBlocksPerSeq, int64_t numBlocks)
    {
        gm_ = gm;
        weights_.SetGlobalBuffer(gm.weights);
        queryScale_.SetGlobalBuffer(gm.queryScale);
        keyScale_.SetGlobalBuffer(gm.keyScale);
        vecKeys_ = vecKeys;
        kPad_ = li::AlignUp(sparseCount, 32);
        blockSize_ = blockSize;
        keyScaleBlockStride_ = keyScaleBlockStride;
        maxBlocksPerSeq_ = maxBlocksPerSeq;
        numBlocks_ = numBlocks;
        // The sizes the host checked against the UB (li::PlanUb); mergeBuf doubles as mask and
        // gather scratch of kBlock entries, so it is never sized by sparse_count alone.
        const li::UbPlan plan = li::PlanUb(vecKeys, K, sparseCount);
        pipe->InitBuffer(mmQueue_, li::DOUBLE_BUFFER, plan.mmIn / li::DOUBLE_BUFFER);
        pipe->InitBuffer(mmFloat_, plan.mmFloat);
        pipe->InitBuffer(headWeight_, plan.headWeight);
        pipe->InitBuffer(unitScore_, plan.unitScore);
        pipe->InitBuffer(keyScaleBuf_, plan.keyScale);
        pipe->InitBuffer(sortBuf_, plan.sortBuf);
        pipe->InitBuffer(running_, plan.running);
        pipe->InitBuffer(mergeBuf_, plan.mergeBuf);
    }

    // Both sub-tile buffers start free (pairs with LiCube::Finish).
    __aicore__ inline void Start()
    {
        CrossCoreSetFlag<CROSS_CORE_MODE, PIPE_MTE2>(FLAG_MM_FREE);
        CrossCoreSetFlag<CROSS_CORE_MODE, PIPE_MTE2>(FLAG_MM_FREE + 1);
    }

    // My tokens of the unit: local indices [t0, t1) of the unit's qRows.
    __aicore__ inline void Tokens(int64_t qRows, int64_t &t0, int64_t &t1) const
    {
        t0 = li::Min(GetSubBlockIdx() * li::TokensPerVecCore(), qRows);
        t1 = li::Min(t0 + li::TokensPerVecCore(), qRows);
    }

    // Scores of one unit for query rows [qRow0, qRow0 + qRows); every sub-tile is waited for and
    // freed even by a core without tokens, so the flag counts of both vector cores stay equal.
    __aicore__ inline void ScoreUnit(int64_t qRow0, int64_t qRows, int64_t b, int64_t kb, int64_t keys)
    {
        int64_t t0 = 0;
        int64_t t1 = 0;
        Tokens(qRows, t0, t1);
        for (int64_t t = t0; t < t1; ++t) {
            LoadHeadWeights(qRow0 + t, t - t0);
        }
        LoadKeyScales(b, kb, keys);
        for (int64_t sub = 0; sub * li::S2_SUBTILE < keys; ++sub) {
            const int64_t buf = subTile_ % 2;
            CrossCoreWaitFlag<CROSS_CORE_MODE, PIPE_MTE2>(FLAG_MM_READY + buf);  // MTE2 may read it
            const int64_t n = li::Min(li::S2_SUBTILE, keys - sub * li::S2_SUBTILE);
            for (int64_t t = t0; t < t1; ++t) {
                HeadSum(buf, t, t - t0, sub * li::S2_SUBTILE, n);
            }
            CrossCoreSetFlag<CROSS_CORE_MODE, PIPE_MTE2>(FLAG_MM_FREE + buf);
            ++subTile_;
        }
    }

    // Masks, sorts and merges token slot `slot`'s unit scores into its running list; `visible`
    // is how many of the unit's keys the token sees (SPEC §1.3), `first` restarts the list.
    __aicore__ inline void SelectUnit(int64_t slot, int64_t kb, int64_t visible, bool first)
    {
        LocalTensor<float> score = unitScore_.Get<float>()[slot * K];
        Mul(score, score, keyScaleBuf_.Get<float>(), K);
        MaskFrom(score, visible);
        LocalTensor<float> sorted = sortBuf_.Get<float>();
        LocalTensor<float> tmp = sorted[2 * K];
        LocalTensor<int32_t> idx = mmFloat_.Get<int32_t>();
        WaitPipe<HardEvent::V_S>();  // ArithProgression writes its first block with scalar stores
        ArithProgression<int32_t>(idx, static_cast<int32_t>(kb * K), 1, K);
        PipeBarrier<PIPE_V>();
        Sort<float, true>(sorted, score, idx.ReinterpretCast<uint32_t>(), tmp, K / 32);
        PipeBarrier<PIPE_V>();
        LocalTensor<float> run = running_.Get<float>()[slot * kPad_ * 2];
        if (first) {
            DataCopy(run, sorted, kPad_ * 2);
            PipeBarrier<PIPE_V>();
            return;
        }
        LocalTensor<float> merged = mergeBuf_.Get<float>();
        const uint16_t lengths[4] = {static_cast<uint16_t>(kPad_), static_cast<uint16_t>(li::Min(kPad_, K)), 0, 0};
        MrgSort<float>(merged, MrgSortSrcList<float>(run, sorted, sorted, sorted), MrgSort4Info(lengths, false, 0b0011, 1));
        PipeBarrier<PIPE_V>();
        DataCopy(run, merged, kPad_ * 2);
        PipeBarrier<PIPE_V>();
    }

    // The first `valid` entries of token slot's running list to GM (indices, and values if asked);
    // the rest of the row keeps the -1 / -inf of the fill pass.
    __aicore__ inline void WriteRow(int64_t slot, int64_t valid, GlobalTensor<int32_t> indices,
                                    GlobalTensor<float> values, bool returnValue)
    {
        if (valid <= 0) {
            return;
        }
        LocalTensor<float> val = mergeBuf_.Get<float>();
        LocalTensor<uint32_t> idx = mergeBuf_.Get<uint32_t>()[kPad_];
        Extract(val, idx, running_.Get<float>()[slot * kPad_ * 2], kPad_ / 32);
        WaitPipe<HardEvent::V_MTE3>();
        const DataCopyExtParams row(1, static_cast<uint32_t>(valid * sizeof(int32_t)), 0, 0, 0);
        DataCopyPad(indices, idx.ReinterpretCast<int32_t>(), row);
        if (returnValue) {
            DataCopyPad(values, val, row);
        }
        WaitPipe<HardEvent::MTE3_V>();
    }

    // Partial lists of shared rows: the whole running list of a token, (score, index) pairs.
    __aicore__ inline void StorePartial(int64_t slot, GlobalTensor<float> dst)
    {
        WaitPipe<HardEvent::V_MTE3>();
        DataCopy(dst, running_.Get<float>()[slot * kPad_ * 2], kPad_ * 2);
        WaitPipe<HardEvent::MTE3_V>();
    }

    // Folds one participant's partial list (earlier keys first) into token slot's running list.
    __aicore__ inline void FoldPartial(int64_t slot, GlobalTensor<float> src, bool first)
    {
        LocalTensor<float> run = running_.Get<float>()[slot * kPad_ * 2];
        LocalTensor<float> other = first ? run : sortBuf_.Get<float>();
        WaitPipe<HardEvent::V_MTE2>();  // the previous fold's MrgSort and copy are done with both
        DataCopy(other, src, kPad_ * 2);
        WaitPipe<HardEvent::MTE2_V>();
        if (first) {
            return;
        }
        LocalTensor<float> merged = mergeBuf_.Get<float>();
        const uint16_t lengths[4] = {static_cast<uint16_t>(kPad_), static_cast<uint16_t>(kPad_), 0, 0};
        MrgSort<float>(merged, MrgSortSrcList<float>(run, other, other, other), MrgSort4Info(lengths, false, 0b0011, 1));
        PipeBarrier<PIPE_V>();
        DataCopy(run, merged, kPad_ * 2);
        PipeBarrier<PIPE_V>();
    }

    __aicore__ inline int64_t PaddedK() const { return kPad_; }

private:
    // a[g] = w[g] · qscale[g] for query row `row`, rounded as the A2/A3 float16 multiply rounds.
    __aicore__ inline void LoadHeadWeights(int64_t row, int64_t slot)
    {
        LocalTensor<float> a = headWeight_.Get<float>()[slot * li::HEADS_Q];
        LocalTensor<SCALE> w = mmFloat_.Get<SCALE>();
        LocalTensor<SCALE> qs = w[li::HEADS_Q];
        WaitPipe<HardEvent::V_MTE2>();  // mmFloat was the previous unit's vector scratch
        DataCopy(w, weights_[row * li::HEADS_Q], li::HEADS_Q);
        DataCopy(qs, queryScale_[row * li::HEADS_Q], li::HEADS_Q);
        WaitPipe<HardEvent::MTE2_V>();
        Mul(w, w, qs, li::HEADS_Q);
        PipeBarrier<PIPE_V>();
        if constexpr (INT8_PATH) {
            Cast(a, w, RoundMode::CAST_NONE, li::HEADS_Q);
        } else {
            DataCopy(a, w.template ReinterpretCast<float>(), li::HEADS_Q);
        }
        WaitPipe<HardEvent::V_S>();  // HeadSum reads a[g] as scalars
    }

    // kscale of the unit's keys (times 1024 on A2/A3, undoing the / 1024 of the ReLU step), gathered
    // block by block through block_table; keys past the unit get 0 (they are masked anyway).
    __aicore__ inline void LoadKeyScales(int64_t b, int64_t kb, int64_t keys)
    {
        LocalTensor<float> ks = keyScaleBuf_.Get<float>();
        LocalTensor<SCALE> raw = mmFloat_.Get<SCALE>();
        Duplicate(raw, static_cast<SCALE>(0), K);
        WaitPipe<HardEvent::V_MTE2>();
        if (K % blockSize_ == 0) {
            CopyKeyScales(raw, b, kb, keys);  // every chunk starts on a block: UB-aligned
        } else {
            GatherKeyScales(raw, b, kb, keys);
        }
        if constexpr (INT8_PATH) {
            Cast(ks, raw, RoundMode::CAST_NONE, K);
            PipeBarrier<PIPE_V>();
            Muls(ks, ks, 1024.0f, K);
        } else {
            DataCopy(ks, raw.template ReinterpretCast<float>(), K);
        }
        PipeBarrier<PIPE_V>();
    }

    // The run of the unit's keys that starts at key j and stays inside one cache block.
    struct BlockRun {
        int64_t block;
        int64_t row;
        int64_t rows;
    };

    __aicore__ inline BlockRun RunAt(int64_t b, int64_t kb, int64_t keys, int64_t j) const
    {
        const li::PagedSlot s = li::KeySlot(kb * K + j, blockSize_);
        return {CacheBlock(gm_.blockTable, b, kb * K + j, blockSize_, maxBlocksPerSeq_, numBlocks_), s.row,
                li::Min(blockSize_ - s.row, keys - j)};
    }

    __aicore__ inline void CopyKeyScales(LocalTensor<SCALE> raw, int64_t b, int64_t kb, int64_t keys)
    {
        for (int64_t j = 0; j < keys;) {
            const BlockRun r = RunAt(b, kb, keys, j);
            const DataCopyExtParams cp(1, static_cast<uint32_t>(r.rows * sizeof(SCALE)), 0, 0, 0);
            DataCopyPad(raw[j], keyScale_[r.block * keyScaleBlockStride_ + r.row], cp, DataCopyPadExtParams<SCALE>());
            j += r.rows;
        }
        WaitPipe<HardEvent::MTE2_V>();
    }

    // Block sizes that do not divide the unit (48, 80, ...) start runs mid-block: each run lands on a
    // 32 B-aligned staging slot (in unitScore, free until HeadSum), and one Gather puts the scales in
    // key order (byte offsets in mergeBuf, free until SelectUnit).
    __aicore__ inline void GatherKeyScales(LocalTensor<SCALE> raw, int64_t b, int64_t kb, int64_t keys)
    {
        constexpr int64_t ALIGN = 32 / sizeof(SCALE);
        LocalTensor<SCALE> stage = unitScore_.Get<SCALE>();
        LocalTensor<uint32_t> offsets = mergeBuf_.Get<uint32_t>();
        WaitPipe<HardEvent::V_S>();  // the offsets are scalar stores into vector scratch
        int64_t at = 0;
        for (int64_t j = 0; j < K;) {
            if (j >= keys) {
                offsets.SetValue(j++, 0);
                continue;
            }
            const BlockRun r = RunAt(b, kb, keys, j);
            const DataCopyExtParams cp(1, static_cast<uint32_t>(r.rows * sizeof(SCALE)), 0, 0, 0);
            DataCopyPad(stage[at], keyScale_[r.block * keyScaleBlockStride_ + r.row], cp, DataCopyPadExtParams<SCALE>());
            for (int64_t i = 0; i < r.rows; ++i) {
                offsets.SetValue(j + i, static_cast<uint32_t>((at + i) * sizeof(SCALE)));
            }
            at += li::AlignUp(r.rows, ALIGN);
            j += r.rows;
        }
        WaitPipe<HardEvent::MTE2_V>();
        WaitPipe<HardEvent::S_V>();
        Gather(raw, stage, offsets, 0u, static_cast<uint32_t>(K));
        PipeBarrier<PIPE_V>();
    }

    // unitScore[slot][off + j] = Σ_g a[g] · ReLU(mm[t·64 + g][j]) for j < n, vecKeys keys at a time.
    __aicore__ inline void HeadSum(int64_t buf, int64_t t, int64_t slot, int64_t off, int64_t n)
    {
        LocalTensor<float> a = headWeight_.Get<float>()[slot * li::HEADS_Q];
        LocalTensor<float> acc = unitScore_.Get<float>()[slot * K + off];
        for (int64_t c = 0; c < n; c += vecKeys_) {
            LocalTensor<ACC> in = mmQueue_.AllocTensor<ACC>();
            DataCopyParams cp;
            cp.blockCount = li::HEADS_Q;
            cp.blockLen = vecKeys_ * sizeof(ACC) / 32;
            cp.srcStride = (li::S2_SUBTILE - vecKeys_) * sizeof(ACC) / 32;
            cp.dstStride = 0;
            DataCopy(in, gm_.mm[buf * li::CUBE_M * li::S2_SUBTILE + t * li::HEADS_Q * li::S2_SUBTILE + c], cp);
            mmQueue_.EnQue(in);
            in = mmQueue_.DeQue<ACC>();
            LocalTensor<float> r = mmFloat_.Get<float>();
            const int64_t count = li::HEADS_Q * vecKeys_;
            if constexpr (INT8_PATH) {
                Cast(r, in, RoundMode::CAST_NONE, count);  // exact: |dot| < 2^24
                PipeBarrier<PIPE_V>();
                Muls(r, r, 1.0f / 1024.0f, count);
                PipeBarrier<PIPE_V>();
                Relu(r, r, count);
                PipeBarrier<PIPE_V>();
                LocalTensor<half> h = in.template ReinterpretCast<half>();
                Cast(h, r, RoundMode::CAST_RINT, count);  // nearest-even, as the golden's .half()
                PipeBarrier<PIPE_V>();
                Cast(r, h, RoundMode::CAST_NONE, count);
            } else {
                Relu(r, in.template ReinterpretCast<float>(), count);
            }
            PipeBarrier<PIPE_V>();
            LocalTensor<float> dst = acc[c];
            Muls(dst, r, a.GetValue(0), vecKeys_);
            for (int64_t g = 1; g < li::HEADS_Q; ++g) {
                PipeBarrier<PIPE_V>();
                Axpy(dst, r[g * vecKeys_], a.GetValue(g), vecKeys_);
            }
            PipeBarrier<PIPE_V>();
            mmQueue_.FreeTensor(in);
        }
    }

    // score[j] = -inf for j >= visible: keys the token does not see and the unit's padding.
    __aicore__ inline void MaskFrom(LocalTensor<float> score, int64_t visible)
    {
        LocalTensor<float> pos = mergeBuf_.Get<float>();
        LocalTensor<uint8_t> keep = pos[K].template ReinterpretCast<uint8_t>();
        WaitPipe<HardEvent::V_S>();  // ArithProgression writes its first block with scalar stores
        ArithProgression<float>(pos, 0.0f, 1.0f, K);
        PipeBarrier<PIPE_V>();
        CompareScalar(keep, pos, static_cast<float>(visible), CMPMODE::LT, K);
        PipeBarrier<PIPE_V>();
        Select(score, keep, score, NEG_INF, SELMODE::VSEL_TENSOR_SCALAR_MODE, K);
        PipeBarrier<PIPE_V>();
    }

    Gm gm_;
    GlobalTensor<SCALE> weights_;
    GlobalTensor<SCALE> queryScale_;
    GlobalTensor<SCALE> keyScale_;
    TQue<TPosition::VECIN, 2> mmQueue_;
    TBuf<TPosition::VECCALC> mmFloat_;
    TBuf<TPosition::VECCALC> headWeight_;
    TBuf<TPosition::VECCALC> unitScore_;
    TBuf<TPosition::VECCALC> keyScaleBuf_;
    TBuf<TPosition::VECCALC> sortBuf_;
    TBuf<TPosition::VECCALC> running_;
    TBuf<TPosition::VECCALC> mergeBuf_;
    int64_t vecKeys_ = 0;
    int64_t kPad_ = 0;
    int64_t blockSize_ = 0;
    int64_t keyScaleBlockStride_ = 0;
    int64_t maxBlocksPerSeq_ = 0;
    int64_t numBlocks_ = 0;
    int64_t subTile_ = 0;
};

}  // namespace li_kernel

#endif  // CUSTOM_OPS_LI_VECTOR_H
