// The package's metadata format v1 (custom_ops/metadata.py): int32[1024], header then one
// (b, qb, kb, count) record per worker. tests/test_npu_host.py asserts these equal the Python ones.
#ifndef CUSTOM_OPS_LI_METADATA_FORMAT_H
#define CUSTOM_OPS_LI_METADATA_FORMAT_H

#include "li_portable.h"

namespace li {

constexpr int32_t METADATA_LEN = 1024;
constexpr int32_t FORMAT_ID = 0x4C490001;  // "LI", version 1
constexpr int32_t BACKEND_CPU = 1;
constexpr int32_t BACKEND_CUDA = 2;
constexpr int32_t BACKEND_NPU = 3;
constexpr int32_t HEADER_LEN = 16;
constexpr int32_t RECORD_LEN = 4;
constexpr int32_t MAX_WORKERS = (METADATA_LEN - HEADER_LEN) / RECORD_LEN;  // 252

constexpr int32_t LAYOUT_BSND = 0;
constexpr int32_t LAYOUT_TND = 1;

// Header field positions.
constexpr int32_t F_FORMAT = 0;
constexpr int32_t F_BACKEND = 1;
constexpr int32_t F_WORKERS = 2;
constexpr int32_t F_QBLOCK = 3;
constexpr int32_t F_KBLOCK = 4;
constexpr int32_t F_BATCH = 5;
constexpr int32_t F_UNITS = 6;
constexpr int32_t F_QBLOCKS = 7;
constexpr int32_t F_SPARSE_COUNT = 8;
constexpr int32_t F_SPARSE_MODE = 9;
constexpr int32_t F_CMP_RATIO = 10;
constexpr int32_t F_LAYOUT = 11;

// Record field offsets.
constexpr int32_t R_BATCH = 0;
constexpr int32_t R_QBLOCK = 1;
constexpr int32_t R_KBLOCK = 2;
constexpr int32_t R_COUNT = 3;

// The NPU work unit: 4 query tokens x 64 heads (M = 256 rows of the cube) by 2048 keys.
constexpr int32_t NPU_Q_BLOCK = 4;
constexpr int32_t NPU_K_BLOCK = 2048;
// Most query blocks a header may declare: QB * NPU_Q_BLOCK (the split's max_seqlen_q) fits int32.
constexpr int64_t MAX_Q_BLOCKS = 0x7FFFFFFF / NPU_Q_BLOCK;

}  // namespace li

#endif  // CUSTOM_OPS_LI_METADATA_FORMAT_H
