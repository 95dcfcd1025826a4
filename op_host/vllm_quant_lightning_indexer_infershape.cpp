// Shape and dtype inference of VllmQuantLightningIndexer (graph mode): sparse_indices int32
// [B, S1, N2, K] (BSND) / [T, N2, K] (TND); sparse_values float32, the same shape if return_value,
// else [0] -- as custom_ops/fake.py.
#include <cstring>

#include "li_op_check.h"
#include "register/op_impl_registry.h"

namespace ops {
namespace {

constexpr size_t QUERY = 0;
constexpr size_t KEY = 1;
constexpr size_t ATTR_LAYOUT_QUERY = 2;
constexpr size_t ATTR_SPARSE_COUNT = 4;
constexpr size_t ATTR_RETURN_VALUE = 9;
constexpr size_t KEY_N2_DIM = 2;  // key: [num_blocks, block_size, N2, D]

ge::graphStatus InferShapeVllmQuantLightningIndexer(gert::InferShapeContext *context)
{
    const char *op = context->GetNodeName();
    const gert::Shape *query = context->GetInputShape(QUERY);
    const gert::Shape *key = context->GetInputShape(KEY);
    const gert::RuntimeAttrs *attrs = context->GetAttrs();
    CHECK_NOT_NULL(query, op, "query");
    CHECK_NOT_NULL(key, op, "key");
    CHECK_NOT_NULL(attrs, op, "attrs");
    const char *layout = attrs->GetAttrPointer<char>(ATTR_LAYOUT_QUERY);
    const int64_t *sparseCount = attrs->GetAttrPointer<int64_t>(ATTR_SPARSE_COUNT);
    const bool *returnValue = attrs->GetAttrPointer<bool>(ATTR_RETURN_VALUE);
    CHECK_NOT_NULL(layout, op, "layout_query");
    CHECK_NOT_NULL(sparseCount, op, "sparse_count");
    const bool bsnd = std::strcmp(layout, "BSND") == 0;
    CHECK_RULE(bsnd || std::strcmp(layout, "TND") == 0, op, "layout_query must be BSND or TND, got %s", layout);
    const size_t rank = bsnd ? 4 : 3;
    CHECK_RULE(query->GetDimNum() == rank, op, "query must have %zu dims for layout_query %s, got %zu", rank, layout,
               query->GetDimNum());
    CHECK_RULE(key->GetDimNum() == 4, op, "key must have 4 dims (PA_BSND), got %zu", key->GetDimNum());

    gert::Shape *indices = context->GetOutputShape(0);
    gert::Shape *values = context->GetOutputShape(1);
    CHECK_NOT_NULL(indices, op, "sparse_indices shape");
    CHECK_NOT_NULL(values, op, "sparse_values shape");
    indices->SetDimNum(rank);
    for (size_t i = 0; i + 2 < rank; ++i) {
        indices->SetDim(i, query->GetDim(i));
    }
    indices->SetDim(rank - 2, key->GetDim(KEY_N2_DIM));
    indices->SetDim(rank - 1, *sparseCount);
    if (returnValue != nullptr && *returnValue) {
        *values = *indices;
    } else {
        values->SetDimNum(1);
        values->SetDim(0, 0);
    }
    return ge::GRAPH_SUCCESS;
}

ge::graphStatus InferDataTypeVllmQuantLightningIndexer(gert::InferDataTypeContext *context)
{
    context->SetOutputDataType(0, ge::DT_INT32);
    context->SetOutputDataType(1, ge::DT_FLOAT);
    return ge::GRAPH_SUCCESS;
}

}  // namespace

IMPL_OP_INFERSHAPE(VllmQuantLightningIndexer)
    .InferShape(InferShapeVllmQuantLightningIndexer)
    .InferDataType(InferDataTypeVllmQuantLightningIndexer);

}  // namespace ops
