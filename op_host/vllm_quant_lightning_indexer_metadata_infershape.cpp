// Shape and dtype inference of VllmQuantLightningIndexerMetadata: always int32 [1024].
#include "li_metadata_format.h"
#include "li_op_check.h"
#include "register/op_impl_registry.h"

namespace ops {
namespace {

ge::graphStatus InferShapeVllmQuantLightningIndexerMetadata(gert::InferShapeContext *context)
{
    gert::Shape *out = context->GetOutputShape(0);
    CHECK_NOT_NULL(out, context->GetNodeName(), "metadata shape");
    out->SetDimNum(1);
    out->SetDim(0, li::METADATA_LEN);
    return ge::GRAPH_SUCCESS;
}

ge::graphStatus InferDataTypeVllmQuantLightningIndexerMetadata(gert::InferDataTypeContext *context)
{
    context->SetOutputDataType(0, ge::DT_INT32);
    return ge::GRAPH_SUCCESS;
}

}  // namespace

IMPL_OP_INFERSHAPE(VllmQuantLightningIndexerMetadata)
    .InferShape(InferShapeVllmQuantLightningIndexerMetadata)
    .InferDataType(InferDataTypeVllmQuantLightningIndexerMetadata);

}  // namespace ops
