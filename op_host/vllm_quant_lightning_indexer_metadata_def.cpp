// Op definition of VllmQuantLightningIndexerMetadata (torch:
// custom::npu_vllm_quant_lightning_indexer_metadata): int32[1024] schedule from the length
// tensors, computed on a vector core. `device` of the torch schema picks the output device and
// is not an op attribute; aic_core_num (0: the platform's) lets graph mode pass the core count of
// the stream the indexer will run on.
#include "li_op_def.h"

namespace ops {

class VllmQuantLightningIndexerMetadata : public OpDef {
public:
    explicit VllmQuantLightningIndexerMetadata(const char *name) : OpDef(name)
    {
        this->Input("actual_seq_lengths_query").ParamType(OPTIONAL).DataType({ge::DT_INT32})
            .Format({ge::FORMAT_ND}).AutoContiguous();
        this->Input("actual_seq_lengths_key").ParamType(OPTIONAL).DataType({ge::DT_INT32})
            .Format({ge::FORMAT_ND}).AutoContiguous();
        this->Output("metadata").ParamType(REQUIRED).DataType({ge::DT_INT32}).Format({ge::FORMAT_ND});
        this->Attr("num_heads_q").AttrType(REQUIRED).Int();
        this->Attr("num_heads_k").AttrType(REQUIRED).Int();
        this->Attr("head_dim").AttrType(REQUIRED).Int();
        this->Attr("query_quant_mode").AttrType(OPTIONAL).Int(0);
        this->Attr("key_quant_mode").AttrType(OPTIONAL).Int(0);
        this->Attr("batch_size").AttrType(OPTIONAL).Int(0);
        this->Attr("max_seqlen_q").AttrType(OPTIONAL).Int(0);
        this->Attr("max_seqlen_k").AttrType(OPTIONAL).Int(0);
        AddSelectionAttrs(*this);
        this->Attr("aic_core_num").AttrType(OPTIONAL).Int(0);
        AddAllSocs(*this);
    }
};

OP_ADD(VllmQuantLightningIndexerMetadata);

}  // namespace ops
