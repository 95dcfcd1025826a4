// SPEC §1.2 / §1.3 arithmetic: floor division, query lengths in every layout, visible keys, slots.
#include <vector>

#include "check.h"
#include "li_mask.h"

namespace {

struct Lens {
    std::vector<int32_t> v;
    int64_t operator()(int64_t i) const { return v[i]; }
};

}  // namespace

TEST(floor_div_rounds_toward_minus_infinity)
{
    CHECK_EQ(li::FloorDiv(7, 2), 3);
    CHECK_EQ(li::FloorDiv(-7, 2), -4);
    CHECK_EQ(li::FloorDiv(-8, 4), -2);
    CHECK_EQ(li::FloorDiv(0, 128), 0);
}

TEST(bsnd_query_lengths_default_to_s1_without_tensor)
{
    const li::QueryLens q{li::LAYOUT_BSND, 0, 3, 5};
    const Lens none{{}};
    CHECK_EQ(li::QueryLen(q, none, 2), 5);
    CHECK_EQ(li::QueryRow0(q, none, 2), 10);
}

TEST(bsnd_query_lengths_read_tensor)
{
    const li::QueryLens q{li::LAYOUT_BSND, 3, 3, 5};
    const Lens lens{{5, 0, 2}};
    CHECK_EQ(li::QueryLen(q, lens, 1), 0);
    CHECK_EQ(li::QueryLen(q, lens, 2), 2);
}

TEST(tnd_cumulative_b_and_b_plus_one_forms_agree)
{
    const li::QueryLens qb{li::LAYOUT_TND, 3, 3, 0};
    const li::QueryLens qb1{li::LAYOUT_TND, 4, 3, 0};
    const Lens cum{{3, 3, 10}};
    const Lens cum0{{0, 3, 3, 10}};
    for (int64_t b = 0; b < 3; ++b) {
        CHECK_EQ(li::QueryLen(qb, cum, b), li::QueryLen(qb1, cum0, b));
        CHECK_EQ(li::QueryRow0(qb, cum, b), li::QueryRow0(qb1, cum0, b));
    }
    CHECK_EQ(li::QueryLen(qb, cum, 1), 0);
    CHECK_EQ(li::QueryLen(qb, cum, 2), 7);
    CHECK_EQ(li::QueryRow0(qb, cum, 2), 3);
}

TEST(sparse_mode_zero_sees_all_compressed_keys)
{
    CHECK_EQ(li::VisibleKeys(0, 4, 515, 4, li::SPARSE_MODE_ALL), 128);
    CHECK_EQ(li::VisibleKeys(3, 4, 3, 4, li::SPARSE_MODE_ALL), 0);
}

TEST(causal_mask_follows_spec_formula)
{
    // L = min(S2c, floor((S2 - S1 + s + 1) / cmp)), clamped at 0.
    CHECK_EQ(li::VisibleKeys(0, 4, 512, 1, li::SPARSE_MODE_CAUSAL), 509);
    CHECK_EQ(li::VisibleKeys(3, 4, 512, 1, li::SPARSE_MODE_CAUSAL), 512);
    CHECK_EQ(li::VisibleKeys(0, 4, 512, 4, li::SPARSE_MODE_CAUSAL), 127);
    CHECK_EQ(li::VisibleKeys(3, 4, 512, 4, li::SPARSE_MODE_CAUSAL), 128);
    CHECK_EQ(li::VisibleKeys(0, 8, 4, 1, li::SPARSE_MODE_CAUSAL), 0);  // S2 < S1: early rows see nothing
    CHECK_EQ(li::VisibleKeys(0, 1, 3, 4, li::SPARSE_MODE_CAUSAL), 0);  // S2 < cmp_ratio
}

TEST(causal_mask_brute_force_agrees)
{
    for (int64_t cmp : {1, 2, 4, 128}) {
        for (int64_t s2 = 0; s2 < 300; s2 += 7) {
            for (int64_t s1 = 1; s1 < 9; ++s1) {
                for (int64_t s = 0; s < s1; ++s) {
                    int64_t seen = 0;  // compressed key j is visible iff (j + 1) * cmp <= S2 - S1 + s + 1
                    for (int64_t j = 0; j < s2 / cmp; ++j) {
                        seen += ((j + 1) * cmp <= s2 - s1 + s + 1) ? 1 : 0;
                    }
                    CHECK_EQ(li::VisibleKeys(s, s1, s2, cmp, li::SPARSE_MODE_CAUSAL), seen);
                }
            }
        }
    }
}

TEST(paged_slot_and_offset)
{
    const li::PagedSlot slot = li::KeySlot(300, 128);
    CHECK_EQ(slot.tableCol, 2);
    CHECK_EQ(slot.row, 44);
    // A view whose block stride exceeds block_size * D (non-contiguous along blocks only).
    CHECK_EQ(li::KeyOffset(7, 44, 2 * 128 * 128, 128), 7 * 2 * 128 * 128 + 44 * 128);
}

TEST(table_lookups_stay_in_bounds)
{
    CHECK_EQ(li::SafeTableCol(5, 8), 5);
    CHECK_EQ(li::SafeTableCol(9, 8), 7);  // a length beyond the table reads its last column
    CHECK_EQ(li::SafeBlockId(3, 10), 3);
    CHECK_EQ(li::SafeBlockId(10, 10), 0);
    CHECK_EQ(li::SafeBlockId(-1, 10), 0);
}
