// One case per tiling rule of the indexer and its metadata op.
#include <set>
#include <string>

#include "check.h"
#include "li_tiling_math.h"

TEST(unit_is_four_tokens_by_64_heads_by_2048_keys)
{
    CHECK_EQ(li::CUBE_M, 256);
    CHECK_EQ(li::SubTilesPerUnit(li::NPU_K_BLOCK), 4);
    CHECK_EQ(li::TokensPerVecCore(), 2);
}

TEST(mm1_workspace_is_double_buffered_subtile_per_cube)
{
    CHECK_EQ(li::Mm1WorkspaceBytes(24), 256LL * 512 * 4 * 2 * 24);  // 24 MiB on a 24-core A2/A3
}

TEST(partial_workspace_holds_two_rows_of_four_tokens_per_core)
{
    CHECK_EQ(li::PartialWorkspaceBytes(24, 2048), 24LL * 2 * 4 * 2048 * 8);
    CHECK_EQ(li::PartialWorkspaceBytes(1, 1), 2LL * 4 * 32 * 8);  // lists padded to 32 entries (one Sort32 repeat)
    CHECK_EQ(li::IndexerUserWorkspaceBytes(24, 512), li::Mm1WorkspaceBytes(24) + li::PartialWorkspaceBytes(24, 512));
}

TEST(usable_ub_leaves_the_framework_reserve)
{
    CHECK_EQ(li::UsableUbBytes(li::UB_BYTES_A2), 192 * 1024 - 256 - 8 * 1024);
    CHECK_EQ(li::UsableUbBytes(100), 0);
}

TEST(ub_plan_fits_the_usable_a2_ub_for_every_sparse_count)
{
    const int64_t usable = li::UsableUbBytes(li::UB_BYTES_A2);
    for (int64_t sc = 1; sc <= li::MAX_SPARSE_COUNT; ++sc) {
        const int64_t keys = li::ChooseVecKeys(li::NPU_K_BLOCK, sc, usable);
        CHECK_MSG(keys >= 32, "sparse_count " + std::to_string(sc));
        CHECK_MSG(li::PlanUb(keys, li::NPU_K_BLOCK, sc).total <= usable, "sparse_count " + std::to_string(sc));
    }
}

TEST(ub_plan_of_sparse_count_1024_needs_the_reserve_taken_off)
{
    // 128-key steps fit the raw 192 KiB but not what the framework leaves.
    CHECK_EQ(li::ChooseVecKeys(li::NPU_K_BLOCK, 1024, li::UB_BYTES_A2), 128);
    CHECK_EQ(li::ChooseVecKeys(li::NPU_K_BLOCK, 1024, li::UsableUbBytes(li::UB_BYTES_A2)), 64);
}

TEST(ub_plan_takes_the_widest_chunk_that_fits)
{
    const int64_t usable = li::UsableUbBytes(li::UB_BYTES_A2);
    const int64_t keys = li::ChooseVecKeys(li::NPU_K_BLOCK, 2048, usable);
    CHECK(keys < 256);
    CHECK(li::PlanUb(keys * 2, li::NPU_K_BLOCK, 2048).total > usable);
    CHECK_EQ(li::ChooseVecKeys(li::NPU_K_BLOCK, 2048, 1024), 0);  // nothing fits a tiny UB
}

TEST(ub_plan_buffers_are_32_byte_aligned)
{
    const li::UbPlan u = li::PlanUb(64, li::NPU_K_BLOCK, 777);
    for (int64_t part : {u.mmIn, u.mmFloat, u.headWeight, u.unitScore, u.keyScale, u.sortBuf, u.running, u.mergeBuf}) {
        CHECK_EQ(part % li::UB_ALIGN, 0);
    }
}

TEST(tiling_keys_are_distinct_per_variant)
{
    std::set<int32_t> keys;
    for (int32_t quant : {li::QUANT_INT8, li::QUANT_FP8}) {
        for (int32_t layout : {li::LAYOUT_BSND, li::LAYOUT_TND}) {
            for (bool rv : {false, true}) {
                keys.insert(li::IndexerTilingKey(quant, layout, rv));
            }
        }
    }
    CHECK_EQ(keys.size(), 8u);
    CHECK_EQ(li::IndexerTilingKey(li::QUANT_INT8, li::LAYOUT_TND, true), 111);
}

TEST(split_workers_are_clamped_to_metadata_capacity)
{
    CHECK_EQ(li::SplitWorkers(24), 24);
    CHECK_EQ(li::SplitWorkers(0), 1);
    CHECK_EQ(li::SplitWorkers(1000), li::MAX_WORKERS);
}

TEST(block_table_columns_cover_compressed_keys)
{
    CHECK_EQ(li::BlocksForKeys(0, 128), 0);
    CHECK_EQ(li::BlocksForKeys(128, 128), 1);
    CHECK_EQ(li::BlocksForKeys(129, 128), 2);
}

TEST(fill_rows_partition_all_rows_once)
{
    for (int64_t rows : {0, 1, 47, 48, 1000}) {
        int64_t next = 0;
        for (int64_t v = 0; v < 48; ++v) {
            const li::RowRange r = li::FillRows(rows, v, 48);
            CHECK_EQ(r.begin, next);
            CHECK(r.end >= r.begin);
            next = r.end;
        }
        CHECK_EQ(next, rows);
    }
}

TEST(ub_merge_buffer_also_holds_the_mask_scratch)
{
    // sparse_count 1: the merge output is tiny, but the mask needs kBlock floats + kBlock bits.
    const li::UbPlan u = li::PlanUb(64, li::NPU_K_BLOCK, 1);
    CHECK(u.mergeBuf >= li::NPU_K_BLOCK * 4 + li::NPU_K_BLOCK / 8);
}
