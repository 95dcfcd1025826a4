// Tiling data of VllmQuantLightningIndexer: what every AI core reads before it walks its run of
// the metadata schedule. The arithmetic behind each field is in common/li_tiling_math.h.
#ifndef CUSTOM_OPS_VLLM_QUANT_LIGHTNING_INDEXER_TILING_H
#define CUSTOM_OPS_VLLM_QUANT_LIGHTNING_INDEXER_TILING_H

#include "register/tilingdata_base.h"

namespace optiling {

BEGIN_TILING_DATA_DEF(VllmQuantLightningIndexerTilingData)
TILING_DATA_FIELD_DEF(uint32_t, batch);            // B
TILING_DATA_FIELD_DEF(uint32_t, queryRows);        // S1 (BSND) or T (TND): rows of sparse_indices per batch / total
TILING_DATA_FIELD_DEF(uint32_t, outputRows);       // B * S1 or T
TILING_DATA_FIELD_DEF(uint32_t, layoutQuery);      // li::LAYOUT_BSND / LAYOUT_TND
TILING_DATA_FIELD_DEF(uint32_t, queryLenCount);    // entries of actual_seq_lengths_query: 0, B or B + 1
TILING_DATA_FIELD_DEF(uint32_t, numBlocks);        // blocks of the key cache (bounds block_table entries)
TILING_DATA_FIELD_DEF(uint32_t, blockSize);        // rows of one key cache block
TILING_DATA_FIELD_DEF(uint32_t, maxBlocksPerSeq);  // columns of block_table
TILING_DATA_FIELD_DEF(int64_t, keyBlockStride);    // elements between cache blocks of key
TILING_DATA_FIELD_DEF(int64_t, keyScaleBlockStride);
TILING_DATA_FIELD_DEF(uint32_t, sparseCount);
TILING_DATA_FIELD_DEF(uint32_t, sparseMode);
TILING_DATA_FIELD_DEF(uint32_t, cmpRatio);
TILING_DATA_FIELD_DEF(uint32_t, returnValue);
TILING_DATA_FIELD_DEF(uint32_t, vecKeys);          // keys one vector step scores (UB plan)
TILING_DATA_FIELD_DEF(uint32_t, aicNum);           // AI cores launched
TILING_DATA_FIELD_DEF(uint64_t, mm1Offset);        // user-workspace offsets of the Q·Kᵀ sub-tiles
TILING_DATA_FIELD_DEF(uint64_t, partialOffset);    // and of the partial top-k slots
END_TILING_DATA_DEF;

REGISTER_TILING_DATA_CLASS(VllmQuantLightningIndexer, VllmQuantLightningIndexerTilingData)

struct VllmQuantLightningIndexerCompileInfo {};

}  // namespace optiling

#endif  // CUSTOM_OPS_VLLM_QUANT_LIGHTNING_INDEXER_TILING_H
