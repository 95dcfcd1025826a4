// C ABI of the portable host library (libli_host.so), for ctypes: the Python tests evaluate the
// golden piece by piece exactly as this split assigns it (tests/test_npu_schedule.py).
#ifndef CUSTOM_OPS_LI_HOST_API_H
#define CUSTOM_OPS_LI_HOST_API_H

#include <cstdint>

extern "C" {

// Everything the split reads besides the length arrays.
struct LiSplitArgs {
    int32_t layoutQuery;   // 0 BSND, 1 TND
    int32_t qLenCount;     // entries of actual_seq_lengths_query: 0, B or B + 1
    int32_t batch;
    int32_t defaultS1;     // BSND query.shape[1] when actual_seq_lengths_query is absent
    int32_t maxSeqlenQ;
    int32_t sparseCount;
    int32_t sparseMode;
    int32_t cmpRatio;
    int32_t numWorkers;
};

// A metadata constant by its custom_ops/metadata.py name; INT64_MIN if there is none.
int64_t li_constant(const char *name);

// Writes the NPU schedule (int32[1024]) and totals[3] = {units, cost, largest unit cost}.
void li_split(const LiSplitArgs *args, const int32_t *qLens, const int32_t *kLens, int32_t *metadata,
              int64_t *totals);

// Worker w's run: {first b, qb, kb, last b, qb, kb, count, headShared, tailShared, mergesHead,
// firstParticipant, slot of its first row, slot of its last row}.
void li_worker_run(const LiSplitArgs *args, const int32_t *qLens, const int32_t *kLens, const int32_t *metadata,
                   int32_t w, int64_t *run);

// The unit `steps` units after unit[3] = {b, qb, kb} in the enumeration (li::Advance), into next[3].
void li_advance(const LiSplitArgs *args, const int32_t *qLens, const int32_t *kLens, const int64_t *unit,
                int64_t steps, int64_t *next);

// Keys of a unit and what a query token sees (SPEC §1.3).
int64_t li_unit_keys(const LiSplitArgs *args, const int32_t *qLens, const int32_t *kLens, int64_t b, int64_t qb,
                     int64_t kb);
int64_t li_visible_keys(int64_t s, int64_t s1, int64_t s2, int64_t cmpRatio, int32_t sparseMode);

// li::MergeTopK.
int64_t li_merge_topk(const int32_t *aIdx, const float *aVal, int64_t na, const int32_t *bIdx, const float *bVal,
                      int64_t nb, int64_t k, int32_t *outIdx, float *outVal);
}

#endif  // CUSTOM_OPS_LI_HOST_API_H
