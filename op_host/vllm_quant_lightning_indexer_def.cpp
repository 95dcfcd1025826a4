// Op definition of VllmQuantLightningIndexer (torch: custom::npu_vllm_quant_lightning_indexer).
// Inputs and attributes follow the torch schema in order; key_stride0 / key_scale_stride0 are the
// block-axis strides of a key cache that is a view (0: contiguous), filled in by the binding.
#include "li_op_def.h"

namespace ops {

class VllmQuantLightningIndexer : public OpDef {
public:
    explicit VllmQuantLightningIndexer(const char *name) : OpDef(name)
    {
        AddInputs(ge::DT_INT8, ge::DT_FLOAT16, this);
        this->Output("sparse_indices").ParamType(REQUIRED).DataType({ge::DT_INT32}).Format({ge::FORMAT_ND});
        this->Output("sparse_values").ParamType(REQUIRED).DataType({ge::DT_FLOAT}).Format({ge::FORMAT_ND});
        this->Attr("query_quant_mode").AttrType(OPTIONAL).Int(0);
        this->Attr("key_quant_mode").AttrType(OPTIONAL).Int(0);
        AddSelectionAttrs(*this);
        this->Attr("return_value").AttrType(OPTIONAL).Bool(false);
        this->Attr("key_stride0").AttrType(OPTIONAL).Int(0);
        this->Attr("key_scale_stride0").AttrType(OPTIONAL).Int(0);

        const OpAICoreConfig a2a3 = DynamicShapeConfig();  // Atlas A2 / A3: int8 query/key, float16 scales
        this->AICore().AddConfig("ascend910b", a2a3);
        this->AICore().AddConfig("ascend910_93", a2a3);

        OpAICoreConfig a5 = DynamicShapeConfig();  // Ascend 950: fp8 e4m3 query/key, float32 scales
        AddInputs(ge::DT_FLOAT8_E4M3FN, ge::DT_FLOAT, &a5);
        a5.Output("sparse_indices").ParamType(REQUIRED).DataType({ge::DT_INT32}).Format({ge::FORMAT_ND});
        a5.Output("sparse_values").ParamType(REQUIRED).DataType({ge::DT_FLOAT}).Format({ge::FORMAT_ND});
        this->AICore().AddConfig("ascend950", a5);
    }

private:
    // The nine inputs, for one (query/key dtype, weights/scales dtype) family. The key cache and its
    // scales may be views along the block axis (IgnoreContiguous); everything else is made contiguous.
    template <typename Def>
    static void AddInputs(ge::DataType qk, ge::DataType scale, Def *def)
    {
        def->Input("query").ParamType(REQUIRED).DataType({qk}).Format({ge::FORMAT_ND}).AutoContiguous();
        def->Input("key").ParamType(REQUIRED).DataType({qk}).Format({ge::FORMAT_ND}).IgnoreContiguous();
        def->Input("weights").ParamType(REQUIRED).DataType({scale}).Format({ge::FORMAT_ND}).AutoContiguous();
        def->Input("query_dequant_scale").ParamType(REQUIRED).DataType({scale}).Format({ge::FORMAT_ND})
            .AutoContiguous();
        def->Input("key_dequant_scale").ParamType(REQUIRED).DataType({scale}).Format({ge::FORMAT_ND})
            .IgnoreContiguous();
        def->Input("actual_seq_lengths_query").ParamType(OPTIONAL).DataType({ge::DT_INT32})
            .Format({ge::FORMAT_ND}).AutoContiguous();
        def->Input("actual_seq_lengths_key").ParamType(OPTIONAL).DataType({ge::DT_INT32})
            .Format({ge::FORMAT_ND}).AutoContiguous();
        def->Input("block_table").ParamType(OPTIONAL).DataType({ge::DT_INT32}).Format({ge::FORMAT_ND})
            .AutoContiguous();
        def->Input("metadata").ParamType(OPTIONAL).DataType({ge::DT_INT32}).Format({ge::FORMAT_ND})
            .AutoContiguous();
    }
};

OP_ADD(VllmQuantLightningIndexer);

}  // namespace ops
