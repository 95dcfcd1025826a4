// Cube service of the indexer: Q·Kᵀ of one work unit (4 query tokens x 64 heads by 2048 keys),
// K gathered from the paged cache through block_table, written to workspace as int32 (A2/A3)
// or float32 (950) sub-tiles of [256, S2_SUBTILE], double-buffered against the vector cores.
#ifndef CUSTOM_OPS_LI_CUBE_H
#define CUSTOM_OPS_LI_CUBE_H

#include "li_cube_layout.h"
#include "li_gm.h"
#include "li_tiling_math.h"

namespace li_kernel {

using namespace AscendC;

template <typename QK, typename ACC>
class LiCube {
public:
    // L0C tile [128, 128] x 4 B = 64 KiB. L0B and L0C hold two tiles each so that the hand-offs can
    // overlap; this version still waits at every hand-off, both ways: MTE2 -> MTE1 -> M -> FIX for
    // the data, and MTE1 -> MTE2 (L1 reuse), M -> MTE1 (L0A/L0B reuse), FIX -> M (L0C reuse).
    static constexpr int64_t BASE_M = 128;
    static constexpr int64_t BASE_N = 128;
    static constexpr int64_t D = li::HEAD_DIM;
    static constexpr int64_t C0 = 32 / sizeof(QK);  // K elements of one fractal row
    static constexpr int64_t FRACTAL = 16 * C0;     // elements of one 512-byte fractal

    __aicore__ inline void Init(TPipe *pipe, __gm__ QK *query, __gm__ QK *key, __gm__ int32_t *blockTable,
                                GlobalTensor<ACC> mmWorkspace, int64_t blockSize, int64_t keyBlockStride,
                                int64_t maxBlocksPerSeq, int64_t numBlocks)
    {
        query_.SetGlobalBuffer(query);
        key_.SetGlobalBuffer(key);
        blockTable_ = blockTable;
        mm_ = mmWorkspace;
        blockSize_ = blockSize;
        keyBlockStride_ = keyBlockStride;
        maxBlocksPerSeq_ = maxBlocksPerSeq;
        numBlocks_ = numBlocks;
        pipe->InitBuffer(qL1_, li::CUBE_M * D * sizeof(QK));
        pipe->InitBuffer(kL1_, li::S2_SUBTILE * D * sizeof(QK));
        pipe->InitBuffer(aL0_, BASE_M * D * sizeof(QK));
        pipe->InitBuffer(bL0_, 2 * BASE_N * D * sizeof(QK));
        pipe->InitBuffer(cL0_, 2 * BASE_M * BASE_N * sizeof(ACC));
    }

    // The vector cores free both buffers once at start; waiting for both at the end leaves every
    // flag counter where it began.
    __aicore__ inline void Finish()
    {
        CrossCoreWaitFlag<CROSS_CORE_MODE, PIPE_FIX>(FLAG_MM_FREE);
        CrossCoreWaitFlag<CROSS_CORE_MODE, PIPE_FIX>(FLAG_MM_FREE + 1);
    }

    // One unit: query rows [qRow0, qRow0 + qRows) (token-major, 64 heads each) against compressed
    // keys [kb * K, kb * K + keys) of batch b.
    __aicore__ inline void ComputeUnit(int64_t qRow0, int64_t qRows, int64_t b, int64_t kb, int64_t keys)
    {
        const int64_t m = qRows * li::HEADS_Q;
        qRowsPadded_ = li::AlignUp(m, 16);
        LoadQuery(qRow0, m);
        for (int64_t sub = 0; sub * li::S2_SUBTILE < keys; ++sub) {
            const int64_t buf = subTile_ % 2;
            const int64_t k0 = kb * li::NPU_K_BLOCK + sub * li::S2_SUBTILE;
            const int64_t n = li::Min(li::S2_SUBTILE, keys - sub * li::S2_SUBTILE);
            GatherKeys(b, k0, n);
            CrossCoreWaitFlag<CROSS_CORE_MODE, PIPE_FIX>(FLAG_MM_FREE + buf);  // Fixpipe may overwrite it
            for (int64_t m0 = 0; m0 < m; m0 += BASE_M) {
                for (int64_t n0 = 0; n0 < n; n0 += BASE_N) {
                    MmadTile(m0, li::Min(BASE_M, m - m0), n0, li::Min(BASE_N, n - n0), buf);
                }
            }
            CrossCoreSetFlag<CROSS_CORE_MODE, PIPE_FIX>(FLAG_MM_READY + buf);
            ++subTile_;
        }
    }

private:
    // Q rows are contiguous in GM ([.., 64, 128] per token): one ND -> Nz copy into L1.
    __aicore__ inline void LoadQuery(int64_t qRow0, int64_t m)
    {
        WaitPipe<HardEvent::MTE1_MTE2>();  // the previous unit's L0A loads have read qL1
        LocalTensor<QK> q = qL1_.Get<QK>();
        Nd2NzParams p;
        p.ndNum = 1;
        p.nValue = m;
        p.dValue = D;
        p.srcDValue = D;
        p.dstNzC0Stride = qRowsPadded_;
        p.dstNzNStride = 1;
        DataCopy(q, query_[qRow0 * li::HEADS_Q * D], p);
        WaitPipe<HardEvent::MTE2_MTE1>();
    }

    // Keys [k0, k0 + n) of batch b: one ND -> Nz copy per cache block they touch (CacheBlock bounds
    // the table lookups).
    __aicore__ inline void GatherKeys(int64_t b, int64_t k0, int64_t n)
    {
        WaitPipe<HardEvent::MTE1_MTE2>();  // the previous sub-tile's L0B loads have read kL1
        LocalTensor<QK> k = kL1_.Get<QK>();
        for (int64_t j = 0; j < n;) {
            const li::PagedSlot slot = li::KeySlot(k0 + j, blockSize_);
            const int64_t block = CacheBlock(blockTable_, b, k0 + j, blockSize_, maxBlocksPerSeq_, numBlocks_);
            const int64_t rows = li::Min(blockSize_ - slot.row, n - j);
            Nd2NzParams p;
            p.ndNum = 1;
            p.nValue = rows;
            p.dValue = D;
            p.srcDValue = D;
            p.dstNzC0Stride = li::S2_SUBTILE;
            p.dstNzNStride = 1;
            DataCopy(k[li::NzOffset(j, 0, C0, li::S2_SUBTILE)], key_[li::KeyOffset(block, slot.row, keyBlockStride_, D)], p);
            j += rows;
        }
        WaitPipe<HardEvent::MTE2_MTE1>();
    }

    // C[m0.., n0..] = Q·Kᵀ of one [m x n] tile; L1 holds Q and K as Nz, D in K-fractals of c0.
    __aicore__ inline void MmadTile(int64_t m0, int64_t m, int64_t n0, int64_t n, int64_t buf)
    {
        LocalTensor<QK> a = aL0_.Get<QK>();
        LocalTensor<QK> bL0 = bL0_.Get<QK>()[(tile_ % 2) * BASE_N * D];
        LocalTensor<ACC> c = cL0_.Get<ACC>()[(tile_ % 2) * BASE_M * BASE_N];
        WaitPipe<HardEvent::M_MTE1>();  // the previous Mmad has read L0A / L0B
#if __CCE_AICORE__ == 310
        // Ascend 950 multiplies Nz x Zn: both are the L1 order restricted to the tile's rows.
        LoadRows(a, qL1_.Get<QK>(), m0, m, qRowsPadded_);
        LoadRows(bL0, kL1_.Get<QK>(), n0, n, li::S2_SUBTILE);
#else
        // Atlas A2/A3 multiply Zz x Zn (li_cube_layout.h, checked fractal by fractal on the CPU).
        const int64_t kFractals = D / C0;
        for (int64_t r = 0; r < li::CeilDiv(m, li::FRACTAL_ROWS); ++r) {
            Load2D(a, qL1_.Get<QK>(), li::ZzRowLoad(r, m0, kFractals, qRowsPadded_));
        }
        for (int64_t kf = 0; kf < kFractals; ++kf) {
            Load2D(bL0, kL1_.Get<QK>(), li::ZnColumnLoad(kf, n0, n, li::S2_SUBTILE));
        }
#endif
        WaitPipe<HardEvent::MTE1_M>();
        WaitPipe<HardEvent::FIX_M>();  // the Fixpipe of two tiles ago has read this L0C buffer
        MmadParams mp;
        mp.m = m;
        mp.n = n;
        mp.k = D;
        mp.cmatrixInitVal = true;
        Mmad(c, a, bL0, mp);
        WaitPipe<HardEvent::M_FIX>();
        // nSize must be a multiple of 16: the columns past n are keys past the unit, which the vector
        // cores mask, and stay inside the sub-tile's S2_SUBTILE columns.
        FixpipeParamsV220 fp;
        fp.nSize = li::AlignUp(n, 16);
        fp.mSize = m;
        fp.srcStride = li::AlignUp(m, 16);
        fp.dstStride = li::S2_SUBTILE;
        const int64_t dst = buf * li::CUBE_M * li::S2_SUBTILE + m0 * li::S2_SUBTILE + n0;
        Fixpipe<ACC, ACC, CFG_ROW_MAJOR>(mm_[dst], c, fp);
        ++tile_;
    }

    __aicore__ inline void Load2D(LocalTensor<QK> dst, LocalTensor<QK> src, const li::FractalCopy &c)
    {
        LoadData2DParams p;
        p.startIndex = c.start;
        p.repeatTimes = c.repeat;
        p.srcStride = c.stride;
        LoadData(dst[c.dst * FRACTAL], src, p);
    }

#if __CCE_AICORE__ == 310
    // Rows [r0, r0 + rows) of an Nz matrix in L1 whose K-fractal columns hold l1Rows rows, all of D,
    // into L0 in the same fractal order (mStep row fractals per K-fractal).
    __aicore__ inline void LoadRows(LocalTensor<QK> dst, LocalTensor<QK> src, int64_t r0, int64_t rows, int64_t l1Rows)
    {
        LoadData2DParamsV2 p;
        p.mStartPosition = r0 / 16;
        p.kStartPosition = 0;
        p.mStep = li::CeilDiv(rows, 16);
        p.kStep = D / C0;
        p.srcStride = l1Rows / 16;
        p.dstStride = li::CeilDiv(rows, 16);
        p.ifTranspose = false;
        LoadData(dst, src, p);
    }
#endif

    GlobalTensor<QK> query_;
    GlobalTensor<QK> key_;
    __gm__ int32_t *blockTable_ = nullptr;
    GlobalTensor<ACC> mm_;
    TBuf<TPosition::A1> qL1_;
    TBuf<TPosition::B1> kL1_;
    TBuf<TPosition::A2> aL0_;
    TBuf<TPosition::B2> bL0_;
    TBuf<TPosition::CO1> cL0_;
    int64_t blockSize_ = 0;
    int64_t keyBlockStride_ = 0;
    int64_t maxBlocksPerSeq_ = 0;
    int64_t numBlocks_ = 0;
    int64_t qRowsPadded_ = 0;  // rows of the Nz Q in L1: the unit's M rounded up to 16
    int64_t subTile_ = 0;
    int64_t tile_ = 0;
};

}  // namespace li_kernel

#endif  // CUSTOM_OPS_LI_CUBE_H
