// Shape and dtype inference of VtensorAppend: the output is the cache itself.
#include "li_op_check.h"
#include "register/op_impl_registry.h"

namespace ops {
namespace {

ge::graphStatus InferShapeVtensorAppend(gert::InferShapeContext *context)
{
    const gert::Shape *cache = context->GetInputShape(0);
    gert::Shape *out = context->GetOutputShape(0);
    CHECK_NOT_NULL(cache, context->GetNodeName(), "cache");
    CHECK_NOT_NULL(out, context->GetNodeName(), "cache (output)");
    *out = *cache;
    return ge::GRAPH_SUCCESS;
}

ge::graphStatus InferDataTypeVtensorAppend(gert::InferDataTypeContext *context)
{
    context->SetOutputDataType(0, context->GetInputDataType(0));
    return ge::GRAPH_SUCCESS;
}

}  // namespace

IMPL_OP_INFERSHAPE(VtensorAppend).InferShape(InferShapeVtensorAppend).InferDataType(InferDataTypeVtensorAppend);

}  // namespace ops
