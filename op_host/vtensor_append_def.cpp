// Op definition of VtensorAppend (torch: custom::vtensor_append_, SPEC §3): writes states
// [B, T, H, D] into the virtual cache [B, S_cap, H, D] at rows positions[b] + t, in place, but
// none at or past limits[b] (the mapped backing; the eager binding passes it). The
// modified input has an output of the same name, which makes the aclnn API in-place
// (aclnnVtensorAppend with cacheRef). cache_stride_b / cache_stride_s are the cache view's strides
// in elements (sequence-major or per-sequence physical layout), filled in by the binding.
#include "li_op_def.h"

namespace ops {

class VtensorAppend : public OpDef {
public:
    explicit VtensorAppend(const char *name) : OpDef(name)
    {
        // Column i of the three lists is one supported (cache, states, positions) combination.
        const std::vector<ge::DataType> values = {ge::DT_FLOAT16, ge::DT_BF16, ge::DT_FLOAT, ge::DT_INT8,
                                                  ge::DT_FLOAT16, ge::DT_BF16, ge::DT_FLOAT, ge::DT_INT8};
        const std::vector<ge::DataType> positions = {ge::DT_INT32, ge::DT_INT32, ge::DT_INT32, ge::DT_INT32,
                                                     ge::DT_INT64, ge::DT_INT64, ge::DT_INT64, ge::DT_INT64};
        const std::vector<ge::Format> nd(values.size(), ge::FORMAT_ND);
        this->Input("cache").ParamType(REQUIRED).DataType(values).Format(nd).IgnoreContiguous();
        this->Input("states").ParamType(REQUIRED).DataType(values).Format(nd).AutoContiguous();
        this->Input("positions").ParamType(REQUIRED).DataType(positions).Format(nd).AutoContiguous();
        // Tokens of each sequence with memory mapped behind them (a virtual cache's `limits`):
        // rows at or past limits[b] are not written. Absent for an ordinary cache and in GE graphs.
        const std::vector<ge::DataType> limits(values.size(), ge::DT_INT64);
        this->Input("limits").ParamType(OPTIONAL).DataType(limits).Format(nd).AutoContiguous();
        this->Output("cache").ParamType(REQUIRED).DataType(values).Format(nd);
        this->Attr("cache_stride_b").AttrType(OPTIONAL).Int(0);
        this->Attr("cache_stride_s").AttrType(OPTIONAL).Int(0);
        AddAllSocs(*this);
    }
};

OP_ADD(VtensorAppend);

}  // namespace ops
