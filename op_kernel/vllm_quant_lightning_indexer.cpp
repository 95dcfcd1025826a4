// Kernel entry of VllmQuantLightningIndexer: a mixed cube + 2 vector kernel, dispatched on the
// tiling key of li::IndexerTilingKey (quant family, layout_query, return_value). The int8 family
// is built for Atlas A2/A3 (__CCE_AICORE__ 220), the fp8 family for Ascend 950 (310).
#include "kernel_operator.h"
#include "vllm_quant_lightning_indexer/li_kernel.h"

using li_kernel::LiArgs;
using li_kernel::LiKernel;

template <typename QK, typename SCALE, typename ACC, int32_t LAYOUT, bool RETURN_VALUE>
__aicore__ inline void RunIndexer(const LiArgs &args, const VllmQuantLightningIndexerTilingData *tiling)
{
    LiKernel<QK, SCALE, ACC, LAYOUT, RETURN_VALUE> op;
    op.Init(args, tiling, tiling->numBlocks);
    op.Process();
}

extern "C" __global__ __aicore__ void vllm_quant_lightning_indexer(
    GM_ADDR query, GM_ADDR key, GM_ADDR weights, GM_ADDR queryDequantScale, GM_ADDR keyDequantScale,
    GM_ADDR actualSeqLengthsQuery, GM_ADDR actualSeqLengthsKey, GM_ADDR blockTable, GM_ADDR metadata,
    GM_ADDR sparseIndices, GM_ADDR sparseValues, GM_ADDR workspace, GM_ADDR tiling)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
    GET_TILING_DATA(tilingData, tiling);
    const LiArgs args{query, key, weights, queryDequantScale, keyDequantScale, actualSeqLengthsQuery,
                      actualSeqLengthsKey, blockTable, metadata, sparseIndices, sparseValues,
                      AscendC::GetUserWorkspace(workspace)};
#if __CCE_AICORE__ == 310
    if (TILING_KEY_IS(200)) {
        RunIndexer<fp8_e4m3fn_t, float, float, li::LAYOUT_BSND, false>(args, &tilingData);
    } else if (TILING_KEY_IS(201)) {
        RunIndexer<fp8_e4m3fn_t, float, float, li::LAYOUT_BSND, true>(args, &tilingData);
    } else if (TILING_KEY_IS(210)) {
        RunIndexer<fp8_e4m3fn_t, float, float, li::LAYOUT_TND, false>(args, &tilingData);
    } else if (TILING_KEY_IS(211)) {
        RunIndexer<fp8_e4m3fn_t, float, float, li::LAYOUT_TND, true>(args, &tilingData);
    }
#else
    if (TILING_KEY_IS(100)) {
        RunIndexer<int8_t, half, int32_t, li::LAYOUT_BSND, false>(args, &tilingData);
    } else if (TILING_KEY_IS(101)) {
        RunIndexer<int8_t, half, int32_t, li::LAYOUT_BSND, true>(args, &tilingData);
    } else if (TILING_KEY_IS(110)) {
        RunIndexer<int8_t, half, int32_t, li::LAYOUT_TND, false>(args, &tilingData);
    } else if (TILING_KEY_IS(111)) {
        RunIndexer<int8_t, half, int32_t, li::LAYOUT_TND, true>(args, &tilingData);
    }
#endif
}
