// Host tiling of VllmQuantLightningIndexerMetadata: check the attributes (SPEC §2, the same
// rules as the indexer's), read the AI-core count, and launch one vector core, which walks the
// rows once (li::WriteSplit is O(rows + workers) scalar code).
#include <cstring>

#include "li_attr_check.h"
#include "li_split.h"
#include "register/op_impl_registry.h"
#include "tiling/platform/platform_ascendc.h"
#include "vllm_quant_lightning_indexer_metadata_tiling.h"

namespace optiling {
namespace {

enum Input : size_t { ASQ, ASK };
enum Attr : size_t {
    NUM_HEADS_Q, NUM_HEADS_K, HEAD_DIM, QUERY_QUANT_MODE, KEY_QUANT_MODE, BATCH_SIZE, MAX_SEQLEN_Q, MAX_SEQLEN_K,
    LAYOUT_QUERY, LAYOUT_KEY, SPARSE_COUNT, SPARSE_MODE, PRE_TOKENS, NEXT_TOKENS, CMP_RATIO, AIC_CORE_NUM
};

int64_t IntAttr(const gert::RuntimeAttrs *attrs, size_t i) { return *attrs->GetAttrPointer<int64_t>(i); }

ge::graphStatus TilingVllmQuantLightningIndexerMetadata(gert::TilingContext *ctx)
{
    const char *op = ctx->GetNodeName();
    const gert::RuntimeAttrs *attrs = ctx->GetAttrs();
    CHECK_NOT_NULL(attrs, op, "attrs");
    const int64_t n1 = IntAttr(attrs, NUM_HEADS_Q);
    const int64_t n2 = IntAttr(attrs, NUM_HEADS_K);
    const int64_t d = IntAttr(attrs, HEAD_DIM);
    const int64_t maxSeqlenQ = IntAttr(attrs, MAX_SEQLEN_Q);
    const int64_t sparseCount = IntAttr(attrs, SPARSE_COUNT);
    const int64_t sparseMode = IntAttr(attrs, SPARSE_MODE);
    const int64_t cmpRatio = IntAttr(attrs, CMP_RATIO);
    const char *layoutQuery = attrs->GetStr(LAYOUT_QUERY);
    const char *layoutKey = attrs->GetStr(LAYOUT_KEY);
    CHECK_RULE(n1 == li::HEADS_Q, op, "num_heads_q must be %ld, got %ld", li::HEADS_Q, n1);
    CHECK_RULE(n2 == li::HEADS_K, op, "num_heads_k must be %ld, got %ld", li::HEADS_K, n2);
    CHECK_RULE(d == li::HEAD_DIM, op, "head_dim must be %ld, got %ld", li::HEAD_DIM, d);
    const SelectionAttrs sel{IntAttr(attrs, QUERY_QUANT_MODE), IntAttr(attrs, KEY_QUANT_MODE), layoutQuery, layoutKey,
                             sparseCount, sparseMode, IntAttr(attrs, PRE_TOKENS), IntAttr(attrs, NEXT_TOKENS), cmpRatio};
    const platform_ascendc::PlatformAscendC platform(ctx->GetPlatformInfo());
    RETURN_IF_FAILED(CheckSelectionAttrs(op, sel, platform.GetSocVersion() == platform_ascendc::SocVersion::ASCEND950));
    CHECK_RULE(maxSeqlenQ >= 0 && maxSeqlenQ <= INT32_MAX, op, "max_seqlen_q must be in [0, 2^31), got %ld", maxSeqlenQ);

    const bool tnd = std::strcmp(layoutQuery, "TND") == 0;
    const gert::StorageShape *ask = ctx->GetOptionalInputShape(ASK);
    const gert::StorageShape *asq = ctx->GetOptionalInputShape(ASQ);
    CHECK_RULE(ask != nullptr && ask->GetOriginShape().GetDimNum() == 1, op,
               "actual_seq_lengths_key must be a 1-D tensor for layout_key PA_BSND");
    const int64_t batch = ask->GetOriginShape().GetDim(0);
    const int64_t batchAttr = IntAttr(attrs, BATCH_SIZE);
    CHECK_RULE(batchAttr == 0 || batchAttr == batch, op,
               "batch_size must be 0 or len(actual_seq_lengths_key) = %ld, got %ld", batch, batchAttr);
    int64_t queryLenCount = 0;
    if (asq != nullptr) {
        const gert::Shape &a = asq->GetOriginShape();
        queryLenCount = a.GetDimNum() == 1 ? a.GetDim(0) : -1;
        CHECK_RULE(queryLenCount == batch || (tnd && queryLenCount == batch + 1), op,
                   "actual_seq_lengths_query must be 1-D with B = %ld%s elements, got %ld", batch,
                   tnd ? " or B + 1" : "", queryLenCount);
    } else {
        CHECK_RULE(!tnd, op, "actual_seq_lengths_query must be given for layout_query TND, got None");
    }

    const int64_t aicAttr = IntAttr(attrs, AIC_CORE_NUM);
    const int64_t aicNum = aicAttr > 0 ? aicAttr : platform.GetCoreNumAic();
    CHECK_RULE(aicNum > 0, op, "aic_core_num must be positive, got %ld", aicNum);

    VllmQuantLightningIndexerMetadataTilingData data;
    data.set_layoutQuery(tnd ? li::LAYOUT_TND : li::LAYOUT_BSND);
    data.set_queryLenCount(queryLenCount);
    data.set_batch(batch);
    data.set_defaultS1(maxSeqlenQ);
    data.set_maxSeqlenQ(maxSeqlenQ);
    data.set_sparseCount(sparseCount);
    data.set_sparseMode(sparseMode);
    data.set_cmpRatio(cmpRatio);
    data.set_numWorkers(li::SplitWorkers(aicNum));
    data.SaveToBuffer(ctx->GetRawTilingData()->GetData(), ctx->GetRawTilingData()->GetCapacity());
    ctx->GetRawTilingData()->SetDataSize(data.GetDataSize());
    ctx->SetBlockDim(1);
    ctx->SetTilingKey(0);
    size_t *workspace = ctx->GetWorkspaceSizes(1);
    workspace[0] = platform.GetLibApiWorkSpaceSize();
    return ge::GRAPH_SUCCESS;
}

ge::graphStatus TilingParseVllmQuantLightningIndexerMetadata(gert::TilingParseContext *)
{
    return ge::GRAPH_SUCCESS;
}

}  // namespace

IMPL_OP_OPTILING(VllmQuantLightningIndexerMetadata)
    .Tiling(TilingVllmQuantLightningIndexerMetadata)
    .TilingParse<VllmQuantLightningIndexerMetadataCompileInfo>(TilingParseVllmQuantLightningIndexerMetadata);

}  // namespace optiling
