// GM views of the indexer's inputs for the portable headers (li_mask.h, li_schedule.h), and the
// clamps that keep a bad length or a bad metadata tensor from addressing memory out of bounds.
#ifndef CUSTOM_OPS_LI_GM_H
#define CUSTOM_OPS_LI_GM_H

#include "kernel_operator.h"
#include "li_schedule.h"
#include "li_tiling_math.h"

namespace li_kernel {

// Length tensor read by the scalar unit, clamped to [0, hi].
struct GmLens {
    __gm__ int32_t *ptr;
    int64_t hi;
    __aicore__ inline int64_t operator()(int64_t i) const { return li::Clamp(ptr[i], 0, hi); }
};

// Metadata read by the scalar unit.
struct GmMeta {
    __gm__ int32_t *ptr;
    __aicore__ inline int64_t operator()(int64_t i) const { return ptr[i]; }
};

// Cache block holding compressed key j of batch b, read from block_table and bounded.
__aicore__ inline int64_t CacheBlock(__gm__ int32_t *blockTable, int64_t b, int64_t j, int64_t blockSize,
                                     int64_t maxBlocksPerSeq, int64_t numBlocks)
{
    const int64_t col = li::SafeTableCol(li::KeySlot(j, blockSize).tableCol, maxBlocksPerSeq);
    return li::SafeBlockId(blockTable[b * maxBlocksPerSeq + col], numBlocks);
}

// This core's AI core: a cube core's block index, or its vector core's index / 2 (1:2 mix launch).
// ASCEND_IS_AIV expands to `constexpr(...)`, so it can only follow an `if`.
__aicore__ inline int64_t AiCoreIdx()
{
    if ASCEND_IS_AIV {
        return AscendC::GetBlockIdx() / li::VEC_CORES_PER_AIC;
    }
    return AscendC::GetBlockIdx();
}

// The consumer pipe of EVENT waits until the producer pipe has finished everything issued so far.
// The event id comes from the pipe's pool, so it never collides with the ids TQue holds between
// FreeTensor and the next AllocTensor.
template <AscendC::HardEvent EVENT>
__aicore__ inline void WaitPipe()
{
    const int32_t id = static_cast<int32_t>(AscendC::GetTPipePtr()->FetchEventID(EVENT));
    AscendC::SetFlag<EVENT>(id);
    AscendC::WaitFlag<EVENT>(id);
}

// Cross-core flags between a cube core and its two vector cores (mode 2); SyncAll owns 11-14.
// Waits name the mode and the pipe that must wait: Atlas A2/A3 ignore both and stall every pipe,
// Ascend 950 honours them, and the defaults (mode 0, PIPE_S) would be wrong there.
constexpr uint16_t FLAG_MM_READY = 0;  // + buffer (0, 1): the cube wrote a Q·Kᵀ sub-tile
constexpr uint16_t FLAG_MM_FREE = 2;   // + buffer (0, 1): both vector cores consumed it
constexpr uint8_t CROSS_CORE_MODE = 2;

// The metadata is trusted only if it is this package's NPU schedule of this call: same batch,
// selection attributes and layout, and no more workers than the partial-list workspace holds
// (the header, here), and records that split exactly this call's units (li::RecordsCoverUnits,
// once the split parameters are known). Anything else leaves the outputs at -1 / -inf (the
// host checks cannot read device data).
struct MetadataExpect {
    int64_t batch;
    int64_t sparseCount;
    int64_t sparseMode;
    int64_t cmpRatio;
    int64_t layout;
    int64_t maxWorkers;
};

__aicore__ inline bool MetadataUsable(const GmMeta &meta, const MetadataExpect &e)
{
    return meta(li::F_FORMAT) == li::FORMAT_ID && meta(li::F_BACKEND) == li::BACKEND_NPU &&
           meta(li::F_WORKERS) >= 1 && meta(li::F_WORKERS) <= li::Min(e.maxWorkers, li::MAX_WORKERS) &&
           (meta(li::F_QBLOCK) == li::NPU_Q_BLOCK || meta(li::F_QBLOCK) == 0) &&
           meta(li::F_KBLOCK) == li::NPU_K_BLOCK && meta(li::F_BATCH) == e.batch && meta(li::F_QBLOCKS) >= 1 &&
           meta(li::F_QBLOCKS) <= li::MAX_Q_BLOCKS &&
           meta(li::F_SPARSE_COUNT) == e.sparseCount && meta(li::F_SPARSE_MODE) == e.sparseMode &&
           meta(li::F_CMP_RATIO) == e.cmpRatio && meta(li::F_LAYOUT) == e.layout;
}

}  // namespace li_kernel

#endif  // CUSTOM_OPS_LI_GM_H
