// Tiling data of VllmQuantLightningIndexerMetadata: the static half of li::SplitParams; the
// kernel reads the lengths from GM and runs li::WriteSplit.
#ifndef CUSTOM_OPS_VLLM_QUANT_LIGHTNING_INDEXER_METADATA_TILING_H
#define CUSTOM_OPS_VLLM_QUANT_LIGHTNING_INDEXER_METADATA_TILING_H

#include "register/tilingdata_base.h"

namespace optiling {

BEGIN_TILING_DATA_DEF(VllmQuantLightningIndexerMetadataTilingData)
TILING_DATA_FIELD_DEF(int32_t, layoutQuery);
TILING_DATA_FIELD_DEF(int32_t, queryLenCount);  // 0 (absent), B or B + 1
TILING_DATA_FIELD_DEF(int32_t, batch);
TILING_DATA_FIELD_DEF(int32_t, defaultS1);      // BSND without actual_seq_lengths_query: max_seqlen_q
TILING_DATA_FIELD_DEF(int32_t, maxSeqlenQ);
TILING_DATA_FIELD_DEF(int32_t, sparseCount);
TILING_DATA_FIELD_DEF(int32_t, sparseMode);
TILING_DATA_FIELD_DEF(int32_t, cmpRatio);
TILING_DATA_FIELD_DEF(int32_t, numWorkers);     // AI cores the indexer runs on
END_TILING_DATA_DEF;

REGISTER_TILING_DATA_CLASS(VllmQuantLightningIndexerMetadata, VllmQuantLightningIndexerMetadataTilingData)

struct VllmQuantLightningIndexerMetadataCompileInfo {};

}  // namespace optiling

#endif  // CUSTOM_OPS_VLLM_QUANT_LIGHTNING_INDEXER_METADATA_TILING_H
