#include "li_host_api.h"

#include <cstring>
#include <limits>

#include "li_schedule.h"
#include "li_topk.h"

namespace {

struct ArrayLens {
    const int32_t *data;
    int64_t operator()(int64_t i) const { return data[i]; }
};

struct MetaReader {
    const int32_t *data;
    int64_t operator()(int64_t i) const { return data[i]; }
};

struct MetaWriter {
    int32_t *data;
    void operator()(int32_t i, int32_t v) const { data[i] = v; }
};

li::SplitParams ParamsOf(const LiSplitArgs &a)
{
    return {{a.layoutQuery, a.qLenCount, a.batch, a.defaultS1},
            a.maxSeqlenQ, a.sparseCount, a.sparseMode, a.cmpRatio, a.numWorkers, li::NPU_Q_BLOCK,
            li::NPU_K_BLOCK};
}

struct NamedConstant {
    const char *name;
    int64_t value;
};

const NamedConstant CONSTANTS[] = {
    {"METADATA_LEN", li::METADATA_LEN}, {"FORMAT_ID", li::FORMAT_ID},
    {"BACKEND_CPU", li::BACKEND_CPU},   {"BACKEND_CUDA", li::BACKEND_CUDA},
    {"BACKEND_NPU", li::BACKEND_NPU},   {"HEADER_LEN", li::HEADER_LEN},
    {"RECORD_LEN", li::RECORD_LEN},     {"MAX_WORKERS", li::MAX_WORKERS},
    {"F_FORMAT", li::F_FORMAT},         {"F_BACKEND", li::F_BACKEND},
    {"F_WORKERS", li::F_WORKERS},       {"F_QBLOCK", li::F_QBLOCK},
    {"F_KBLOCK", li::F_KBLOCK},         {"F_BATCH", li::F_BATCH},
    {"F_UNITS", li::F_UNITS},           {"F_QBLOCKS", li::F_QBLOCKS},
    {"F_SPARSE_COUNT", li::F_SPARSE_COUNT}, {"F_SPARSE_MODE", li::F_SPARSE_MODE},
    {"F_CMP_RATIO", li::F_CMP_RATIO},   {"F_LAYOUT", li::F_LAYOUT},
    {"LAYOUT_BSND", li::LAYOUT_BSND},   {"LAYOUT_TND", li::LAYOUT_TND},
    {"NPU_Q_BLOCK", li::NPU_Q_BLOCK},   {"NPU_K_BLOCK", li::NPU_K_BLOCK},
};

}  // namespace

extern "C" {

int64_t li_constant(const char *name)
{
    for (const NamedConstant &c : CONSTANTS) {
        if (std::strcmp(c.name, name) == 0) {
            return c.value;
        }
    }
    return std::numeric_limits<int64_t>::min();
}

void li_split(const LiSplitArgs *args, const int32_t *qLens, const int32_t *kLens, int32_t *metadata,
              int64_t *totals)
{
    const li::SplitTotals t = li::WriteSplit(ParamsOf(*args), ArrayLens{qLens}, ArrayLens{kLens}, MetaWriter{metadata});
    totals[0] = t.units;
    totals[1] = t.cost;
    totals[2] = t.maxUnitCost;
}

void li_worker_run(const LiSplitArgs *args, const int32_t *qLens, const int32_t *kLens, const int32_t *metadata,
                   int32_t w, int64_t *run)
{
    const li::SplitParams p = ParamsOf(*args);
    const ArrayLens ql{qLens};
    const ArrayLens kl{kLens};
    const MetaReader meta{metadata};
    const li::WorkerRun r = li::RunOf(p, ql, kl, meta, w);
    const int64_t out[] = {r.first.b, r.first.qb, r.first.kb, r.last.b, r.last.qb, r.last.kb, r.count,
                           r.headShared, r.tailShared, li::MergesHeadRow(r),
                           li::FirstParticipant(p, ql, kl, meta, w), li::PartialSlot(r, r.first),
                           li::PartialSlot(r, r.last)};
    std::memcpy(run, out, sizeof(out));
}

void li_advance(const LiSplitArgs *args, const int32_t *qLens, const int32_t *kLens, const int64_t *unit,
                int64_t steps, int64_t *next)
{
    const li::Unit u = li::Advance(ParamsOf(*args), ArrayLens{qLens}, ArrayLens{kLens}, li::Unit{unit[0], unit[1], unit[2]},
                                   steps);
    next[0] = u.b;
    next[1] = u.qb;
    next[2] = u.kb;
}

int64_t li_unit_keys(const LiSplitArgs *args, const int32_t *qLens, const int32_t *kLens, int64_t b, int64_t qb,
                     int64_t kb)
{
    const li::SplitParams p = ParamsOf(*args);
    return li::UnitKeys(li::RowOf(p, ArrayLens{qLens}, ArrayLens{kLens}, b, qb), kb, p.kBlock);
}

int64_t li_visible_keys(int64_t s, int64_t s1, int64_t s2, int64_t cmpRatio, int32_t sparseMode)
{
    return li::VisibleKeys(s, s1, s2, cmpRatio, sparseMode);
}

int64_t li_merge_topk(const int32_t *aIdx, const float *aVal, int64_t na, const int32_t *bIdx, const float *bVal,
                      int64_t nb, int64_t k, int32_t *outIdx, float *outVal)
{
    return li::MergeTopK(aIdx, aVal, na, bIdx, bVal, nb, k, outIdx, outVal,
                         -std::numeric_limits<float>::infinity());
}
}
