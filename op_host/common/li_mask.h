// Lengths, visibility and paged-cache addressing of the indexer (SPEC §1.2, §1.3).
//
// Length tensors reach the kernels as GM tensors and the host tests as arrays, so every function
// that reads them takes an accessor: any type with `int64_t operator()(int64_t i) const`.
#ifndef CUSTOM_OPS_LI_MASK_H
#define CUSTOM_OPS_LI_MASK_H

#include "li_metadata_format.h"

namespace li {

constexpr int32_t SPARSE_MODE_ALL = 0;
constexpr int32_t SPARSE_MODE_CAUSAL = 3;

// How actual_seq_lengths_query is to be read (SPEC §1.2).
struct QueryLens {
    int32_t layout;    // LAYOUT_BSND / LAYOUT_TND
    int32_t count;     // entries in actual_seq_lengths_query: 0 (absent, BSND only), B, or B + 1 (TND)
    int32_t batch;     // B
    int32_t defaultS1; // BSND without lengths: query.shape[1]
};

// S1_b: query tokens of batch b.
template <typename Lens>
LI_INLINE int64_t QueryLen(const QueryLens &q, const Lens &lens, int64_t b)
{
    if (q.layout == LAYOUT_BSND) {
        return q.count == 0 ? q.defaultS1 : lens(b);
    }
    if (q.count == q.batch + 1) {
        return lens(b + 1) - lens(b);
    }
    return lens(b) - (b == 0 ? 0 : lens(b - 1));
}

// First output row of batch b: b * S1 for BSND, the cumulative start for TND.
template <typename Lens>
LI_INLINE int64_t QueryRow0(const QueryLens &q, const Lens &lens, int64_t b)
{
    if (q.layout == LAYOUT_BSND) {
        return b * q.defaultS1;
    }
    if (q.count == q.batch + 1) {
        return lens(b);
    }
    return b == 0 ? 0 : lens(b - 1);
}

// S2c_b: compressed keys held in the cache for an original key length s2.
LI_INLINE int64_t CompressedLen(int64_t s2, int64_t cmpRatio) { return FloorDiv(s2, cmpRatio); }

// L: compressed keys [0, L) that query token s (of s1 in its batch) sees; 0 means none.
LI_INLINE int64_t VisibleKeys(int64_t s, int64_t s1, int64_t s2, int64_t cmpRatio, int32_t sparseMode)
{
    const int64_t s2c = CompressedLen(s2, cmpRatio);
    if (sparseMode == SPARSE_MODE_ALL) {
        return Max(s2c, 0);
    }
    return Max(Min(s2c, FloorDiv(s2 - s1 + s + 1, cmpRatio)), 0);
}

// Where compressed key j of a batch lives: row j % blockSize of block blockTable[b, j / blockSize].
struct PagedSlot {
    int64_t tableCol;  // column of block_table
    int64_t row;       // row inside the cache block
};

LI_INLINE PagedSlot KeySlot(int64_t j, int64_t blockSize) { return {j / blockSize, j % blockSize}; }

// The block_table column a key needs, within the table (a longer length than the table covers
// reads its last column), and a block id from the table, within the cache (else block 0): a bad
// table or length gives wrong scores, never an out-of-bounds read.
LI_INLINE int64_t SafeTableCol(int64_t col, int64_t maxBlocksPerSeq) { return Clamp(col, 0, maxBlocksPerSeq - 1); }
LI_INLINE int64_t SafeBlockId(int64_t id, int64_t numBlocks) { return (id >= 0 && id < numBlocks) ? id : 0; }

// Element offset of compressed key j's first byte in the key cache, given the block id read from
// block_table and the cache's stride along the block axis (the cache may be a view, SPEC §1.1).
LI_INLINE int64_t KeyOffset(int64_t blockId, int64_t row, int64_t blockStride, int64_t rowStride)
{
    return blockId * blockStride + row * rowStride;
}

}  // namespace li

#endif  // CUSTOM_OPS_LI_MASK_H
