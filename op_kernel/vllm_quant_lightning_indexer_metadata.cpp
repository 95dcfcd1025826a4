// Kernel of VllmQuantLightningIndexerMetadata: one vector core runs li::WriteSplit (the portable
// split the CPU tests check) over the length tensors in GM and writes the int32[1024] schedule.
// Scalar code only: O(rows + workers) reads and 1024 writes, no host sync, capturable in aclgraph.
#include "kernel_operator.h"
#include "li_split.h"

namespace {

struct GmLens {
    __gm__ int32_t *ptr;
    __aicore__ inline int64_t operator()(int64_t i) const { return li::Max(ptr[i], 0); }
};

struct GmOut {
    __gm__ int32_t *ptr;
    __aicore__ inline void operator()(int32_t i, int32_t v) const { ptr[i] = v; }
};

}  // namespace

extern "C" __global__ __aicore__ void vllm_quant_lightning_indexer_metadata(
    GM_ADDR actualSeqLengthsQuery, GM_ADDR actualSeqLengthsKey, GM_ADDR metadata, GM_ADDR workspace, GM_ADDR tiling)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    GET_TILING_DATA(t, tiling);
    if (AscendC::GetBlockIdx() != 0) {
        return;
    }
    const li::SplitParams p{{t.layoutQuery, t.queryLenCount, t.batch, t.defaultS1}, t.maxSeqlenQ, t.sparseCount,
                            t.sparseMode, t.cmpRatio, t.numWorkers, li::NPU_Q_BLOCK, li::NPU_K_BLOCK};
    li::WriteSplit(p, GmLens{reinterpret_cast<__gm__ int32_t *>(actualSeqLengthsQuery)},
                   GmLens{reinterpret_cast<__gm__ int32_t *>(actualSeqLengthsKey)},
                   GmOut{reinterpret_cast<__gm__ int32_t *>(metadata)});
    // Scalar stores go through the data cache; write it back before the indexer reads the schedule.
    AscendC::GlobalTensor<int32_t> out;
    out.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t *>(metadata), li::METADATA_LEN);
    AscendC::DataCacheCleanAndInvalid<int32_t, AscendC::CacheLine::ENTIRE_DATA_CACHE>(out);
}
