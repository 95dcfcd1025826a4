// Tiling arithmetic of the indexer and its metadata op on Atlas A2/A3 (and Ascend 950): tile
// counts, workspace bytes, the vector cores' UB plan and the tiling key. Host tiling calls these
// with numbers read from the tiling context; tests/host checks every rule.
#ifndef CUSTOM_OPS_LI_TILING_MATH_H
#define CUSTOM_OPS_LI_TILING_MATH_H

#include "li_metadata_format.h"

namespace li {

constexpr int64_t HEADS_Q = 64;           // N1 (the DeepSeek indexer)
constexpr int64_t HEADS_K = 1;            // N2
constexpr int64_t HEAD_DIM = 128;         // D
constexpr int64_t MAX_SPARSE_COUNT = 2048;
constexpr int64_t MAX_BLOCK_SIZE = 1024;
constexpr int64_t BLOCK_SIZE_ALIGN = 16;
constexpr int64_t MAX_CMP_RATIO = 128;

constexpr int64_t UB_BYTES_A2 = 192 * 1024;  // unified buffer of one A2/A3 vector core
// What the AscendC framework keeps of the UB: 256 B in mixed cube/vector kernels, and 8 KiB for the
// APIs that need scratch (Select among them) unless built with --cce-disable-asc-reserved-ubuf.
constexpr int64_t UB_RESERVED_BYTES = 256 + 8 * 1024;
constexpr int64_t UB_ALIGN = 32;             // DataCopy granule
constexpr int64_t VEC_CORES_PER_AIC = 2;     // A2/A3 AI core: one cube + two vector cores
constexpr int64_t DOUBLE_BUFFER = 2;

// The cube writes a unit's Q·Kᵀ (M = 4 tokens x 64 heads, int32) to workspace in S2 sub-tiles,
// double-buffered, so the vector cores score sub-tile i while the cube computes i + 1.
constexpr int64_t CUBE_M = NPU_Q_BLOCK * HEADS_Q;  // 256
constexpr int64_t S2_SUBTILE = 512;
constexpr int64_t MM_ELEM_BYTES = 4;  // int32 (A2/A3) / float32 (950) accumulators

// One partial top-k entry in workspace: int32 index + float32 score.
constexpr int64_t TOPK_ENTRY_BYTES = 8;
constexpr int64_t PARTIAL_SLOTS = 2;  // a worker shares at most its first and its last row

LI_INLINE int64_t SubTilesPerUnit(int64_t kBlock) { return CeilDiv(kBlock, S2_SUBTILE); }

// Query tokens of a unit that one vector core scores (tokens 2v, 2v + 1 on vector core v).
LI_INLINE int64_t TokensPerVecCore() { return CeilDiv(NPU_Q_BLOCK, VEC_CORES_PER_AIC); }

LI_INLINE int64_t Mm1WorkspaceBytes(int64_t aicNum)
{
    return CUBE_M * S2_SUBTILE * MM_ELEM_BYTES * DOUBLE_BUFFER * aicNum;
}

LI_INLINE int64_t PartialWorkspaceBytes(int64_t aicNum, int64_t sparseCount)
{
    return aicNum * PARTIAL_SLOTS * NPU_Q_BLOCK * AlignUp(sparseCount, 32) * TOPK_ENTRY_BYTES;
}

// Everything the indexer asks of GM workspace beyond the system part (GetLibApiWorkSpaceSize).
LI_INLINE int64_t IndexerUserWorkspaceBytes(int64_t aicNum, int64_t sparseCount)
{
    return Mm1WorkspaceBytes(aicNum) + PartialWorkspaceBytes(aicNum, sparseCount);
}

// The vector core's UB, buffer by buffer, for `vecKeys` keys scored per step.
struct UbPlan {
    int64_t vecKeys;
    int64_t mmIn;       // int32 Q·Kᵀ chunk [64 heads, vecKeys], double-buffered
    int64_t mmFloat;    // the chunk after cast / scale / ReLU
    int64_t headWeight; // weights · qscale per head, per token
    int64_t unitScore;  // one token's unit scores + key indices [kBlock]
    int64_t keyScale;   // key_dequant_scale of the unit [kBlock]
    int64_t sortBuf;    // Sort output + its temporary, (score, index) pairs [kBlock]
    int64_t running;    // running top-k per token, (score, index) pairs [sparseCount]
    int64_t mergeBuf;   // MrgSort output of running + unit lists [2 * sparseCount]; doubles as the
                        // mask's key positions [kBlock] + compare bits and the key-scale gather
                        // offsets [kBlock], so never below those
    int64_t total;
};

LI_INLINE UbPlan PlanUb(int64_t vecKeys, int64_t kBlock, int64_t sparseCount)
{
    const int64_t tokens = TokensPerVecCore();
    const int64_t k = AlignUp(sparseCount, 32);
    UbPlan u{};
    u.vecKeys = vecKeys;
    u.mmIn = AlignUp(HEADS_Q * vecKeys * 4, UB_ALIGN) * DOUBLE_BUFFER;
    u.mmFloat = AlignUp(HEADS_Q * vecKeys * 4, UB_ALIGN);
    u.headWeight = AlignUp(tokens * HEADS_Q * 4, UB_ALIGN);
    u.unitScore = AlignUp(kBlock * 4, UB_ALIGN) * 2;
    u.keyScale = AlignUp(kBlock * 4, UB_ALIGN);
    u.sortBuf = AlignUp(kBlock * TOPK_ENTRY_BYTES, UB_ALIGN) * 2;
    u.running = AlignUp(k * TOPK_ENTRY_BYTES, UB_ALIGN) * tokens;
    u.mergeBuf = Max(AlignUp(2 * k * TOPK_ENTRY_BYTES, UB_ALIGN), AlignUp(kBlock * 4, UB_ALIGN) + AlignUp(kBlock / 8, UB_ALIGN));
    u.total = u.mmIn + u.mmFloat + u.headWeight + u.unitScore + u.keyScale + u.sortBuf + u.running + u.mergeBuf;
    return u;
}

// The UB a kernel's TPipe may allocate out of the platform's `ubBytes`.
LI_INLINE int64_t UsableUbBytes(int64_t ubBytes) { return Max(ubBytes - UB_RESERVED_BYTES, 0); }

// The widest key chunk (256, 128, 64 or 32) whose plan fits the UB; 0 if none does.
LI_INLINE int64_t ChooseVecKeys(int64_t kBlock, int64_t sparseCount, int64_t ubBytes)
{
    for (int64_t keys = 256; keys >= 32; keys /= 2) {
        if (PlanUb(keys, kBlock, sparseCount).total <= ubBytes) {
            return keys;
        }
    }
    return 0;
}

// Tiling key of the indexer: hundreds = quant family (1: int8 + fp16 scales, A2/A3; 2: fp8 e4m3 +
// fp32 scales, 950), tens = layout_query (0 BSND, 1 TND), ones = return_value.
constexpr int32_t QUANT_INT8 = 1;
constexpr int32_t QUANT_FP8 = 2;

LI_INLINE int32_t IndexerTilingKey(int32_t quant, int32_t layoutQuery, bool returnValue)
{
    return quant * 100 + layoutQuery * 10 + (returnValue ? 1 : 0);
}

// Workers of the split: one per AI core, never more than the metadata holds.
LI_INLINE int32_t SplitWorkers(int64_t aicNum)
{
    return static_cast<int32_t>(Clamp(aicNum, 1, MAX_WORKERS));
}

// Blocks of a sequence's compressed keys in the paged cache; block_table must have this many columns.
LI_INLINE int64_t BlocksForKeys(int64_t compressedKeys, int64_t blockSize) { return CeilDiv(compressedKeys, blockSize); }

// Rows of sparse_indices that the -1 fill pass of vector core `vec` (of `vecCores`) writes.
struct RowRange {
    int64_t begin;
    int64_t end;
};

LI_INLINE RowRange FillRows(int64_t rows, int64_t vec, int64_t vecCores)
{
    const int64_t per = CeilDiv(rows, vecCores);
    return {Min(vec * per, rows), Min((vec + 1) * per, rows)};
}

}  // namespace li

#endif  // CUSTOM_OPS_LI_TILING_MATH_H
