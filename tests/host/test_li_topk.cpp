// The running top-k merge: SPEC order, ties to the earlier list, -1 / -inf padding, truncation.
#include <limits>
#include <vector>

#include "check.h"
#include "li_topk.h"

namespace {

const float NEG_INF = -std::numeric_limits<float>::infinity();

struct List {
    std::vector<int32_t> idx;
    std::vector<float> val;
};

List Merge(const List &a, const List &b, int64_t k, int64_t *n = nullptr)
{
    List out{std::vector<int32_t>(k), std::vector<float>(k)};
    const int64_t got = li::MergeTopK(a.idx.data(), a.val.data(), a.idx.size(), b.idx.data(), b.val.data(),
                                      b.idx.size(), k, out.idx.data(), out.val.data(), NEG_INF);
    if (n != nullptr) {
        *n = got;
    }
    return out;
}

}  // namespace

TEST(merge_orders_by_score_descending)
{
    const List out = Merge({{0, 2}, {5.f, 1.f}}, {{7, 9}, {4.f, 3.f}}, 4);
    CHECK(out.idx == (std::vector<int32_t>{0, 7, 9, 2}));
}

TEST(merge_ties_go_to_earlier_list_which_holds_smaller_indices)
{
    const List out = Merge({{3, 4}, {2.f, 1.f}}, {{10, 11}, {2.f, 1.f}}, 4);
    CHECK(out.idx == (std::vector<int32_t>{3, 10, 4, 11}));
}

TEST(merge_truncates_to_k)
{
    int64_t n = 0;
    const List out = Merge({{0, 1, 2}, {9.f, 8.f, 7.f}}, {{5, 6}, {8.5f, 1.f}}, 3, &n);
    CHECK_EQ(n, 3);
    CHECK(out.idx == (std::vector<int32_t>{0, 5, 1}));
}

TEST(merge_pads_with_minus_one_and_minus_inf)
{
    int64_t n = 0;
    const List out = Merge({{4, -1}, {1.f, NEG_INF}}, {{}, {}}, 4, &n);
    CHECK_EQ(n, 1);
    CHECK(out.idx == (std::vector<int32_t>{4, -1, -1, -1}));
    CHECK(out.val[3] == NEG_INF);
}

TEST(merge_negative_scores_are_real_entries)
{
    const List out = Merge({{0}, {-3.f}}, {{8}, {-1.f}}, 2);
    CHECK(out.idx == (std::vector<int32_t>{8, 0}));
}

TEST(valid_count_is_min_of_visible_and_sparse_count)
{
    CHECK_EQ(li::ValidCount(0, 2048), 0);
    CHECK_EQ(li::ValidCount(-5, 2048), 0);
    CHECK_EQ(li::ValidCount(100, 2048), 100);
    CHECK_EQ(li::ValidCount(5000, 2048), 2048);
}
