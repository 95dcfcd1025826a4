// The NPU KV append kernel's arithmetic: cache offsets in both layouts, bounds, core split.
#include "check.h"
#include "vtensor_append_math.h"

namespace {

// [B=3, S_cap=10, H*D=8]: per-sequence [B, S, HD] and sequence-major [S, B, HD] strides.
const li::AppendShape PER_SEQ{3, 2, 10, 8, 10 * 8, 8};
const li::AppendShape SEQ_MAJOR{3, 2, 10, 8, 8, 3 * 8};

}  // namespace

TEST(cache_row_offset_follows_strides)
{
    CHECK_EQ(li::CacheRowOffset(PER_SEQ, 2, 4), 2 * 80 + 4 * 8);
    CHECK_EQ(li::CacheRowOffset(SEQ_MAJOR, 2, 4), 2 * 8 + 4 * 24);
}

TEST(rows_outside_capacity_or_batch_are_skipped)
{
    CHECK_EQ(li::CacheRowOffset(PER_SEQ, 0, 10), -1);
    CHECK_EQ(li::CacheRowOffset(PER_SEQ, 0, -1), -1);
    CHECK_EQ(li::CacheRowOffset(PER_SEQ, 3, 0), -1);
}

TEST(rows_past_the_mapped_limit_are_skipped)
{
    CHECK_EQ(li::CacheRowOffset(PER_SEQ, 1, 3, 4), 80 + 3 * 8);
    CHECK_EQ(li::CacheRowOffset(PER_SEQ, 1, 4, 4), -1);  // the first token with no memory behind it
    CHECK_EQ(li::CacheRowOffset(PER_SEQ, 1, 0, 0), -1);  // nothing mapped
    CHECK_EQ(li::CacheRowOffset(PER_SEQ, 1, 0, -5), -1);
    CHECK_EQ(li::CacheRowOffset(SEQ_MAJOR, 2, 9, 1 << 20), 2 * 8 + 9 * 24);  // a limit past S_cap
    CHECK_EQ(li::CacheRowOffset(SEQ_MAJOR, 2, 10, 1 << 20), -1);
}

TEST(append_rows_partition_over_cores)
{
    int64_t next = 0;
    for (int64_t c = 0; c < 4; ++c) {
        const li::AppendRange r = li::AppendRows(PER_SEQ, c, 4);
        CHECK_EQ(r.begin, next);
        next = r.end;
    }
    CHECK_EQ(next, 6);
    CHECK_EQ(li::AppendCores(PER_SEQ, 48), 6);
    CHECK_EQ(li::AppendCores(li::AppendShape{0, 1, 1, 8, 8, 8}, 48), 1);
}

TEST(rows_per_pass_fill_half_the_ub)
{
    CHECK_EQ(li::RowsPerPass(128 * 2, 192 * 1024), 384);  // one K row of H=1, D=128, fp16
    CHECK_EQ(li::RowsPerPass(100, 192 * 1024), 96 * 1024 / 128);
    CHECK_EQ(li::RowsPerPass(0, 192 * 1024), 0);
}
