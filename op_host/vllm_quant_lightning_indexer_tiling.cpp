// Host tiling of VllmQuantLightningIndexer, as a pipeline: parse and check the inputs and
// attributes (SPEC §1.1, every message names the input, the value and the rule) -> platform
// (AI cores, UB size) -> compute (common/li_tiling_math.h) -> write tiling data, key, workspace.
//
// Lengths, block_table and metadata are device tensors: tiling checks their shapes only; their
// values are clamped by the kernel (li_mask.h), never trusted to address memory.
#include <cstring>
#include <utility>

#include "li_attr_check.h"
#include "register/op_impl_registry.h"
#include "tiling/platform/platform_ascendc.h"
#include "vllm_quant_lightning_indexer_tiling.h"

namespace optiling {
namespace {

enum Input : size_t { QUERY, KEY, WEIGHTS, QUERY_SCALE, KEY_SCALE, ASQ, ASK, BLOCK_TABLE, METADATA };
enum Attr : size_t {
    QUERY_QUANT_MODE, KEY_QUANT_MODE, LAYOUT_QUERY, LAYOUT_KEY, SPARSE_COUNT, SPARSE_MODE, PRE_TOKENS,
    NEXT_TOKENS, CMP_RATIO, RETURN_VALUE, KEY_STRIDE0, KEY_SCALE_STRIDE0
};

struct Parsed {
    const char *op = nullptr;
    int32_t quant = li::QUANT_INT8;
    int32_t layoutQuery = li::LAYOUT_BSND;
    int64_t batch = 0;
    int64_t queryRows = 0;
    int64_t outputRows = 0;
    int64_t queryLenCount = 0;
    int64_t numBlocks = 0;
    int64_t blockSize = 0;
    int64_t maxBlocksPerSeq = 0;
    int64_t keyBlockStride = 0;
    int64_t keyScaleBlockStride = 0;
    int64_t sparseCount = 0;
    int64_t sparseMode = 0;
    int64_t cmpRatio = 1;
    bool returnValue = false;
};

const gert::StorageShape *Shape(gert::TilingContext *ctx, size_t i) { return ctx->GetInputShape(i); }
const gert::StorageShape *OptionalShape(gert::TilingContext *ctx, size_t i) { return ctx->GetOptionalInputShape(i); }

ge::graphStatus CheckAttrs(gert::TilingContext *ctx, Parsed &p, platform_ascendc::SocVersion soc)
{
    const gert::RuntimeAttrs *attrs = ctx->GetAttrs();
    CHECK_NOT_NULL(attrs, p.op, "attrs");
    const auto intAttr = [attrs](size_t i) { return *attrs->GetAttrPointer<int64_t>(i); };
    const SelectionAttrs sel{intAttr(QUERY_QUANT_MODE), intAttr(KEY_QUANT_MODE), attrs->GetStr(LAYOUT_QUERY),
                             attrs->GetStr(LAYOUT_KEY),     intAttr(SPARSE_COUNT),   intAttr(SPARSE_MODE),
                             intAttr(PRE_TOKENS),          intAttr(NEXT_TOKENS),    intAttr(CMP_RATIO)};
    RETURN_IF_FAILED(CheckSelectionAttrs(p.op, sel, soc == platform_ascendc::SocVersion::ASCEND950));
    p.layoutQuery = std::strcmp(sel.layoutQuery, "TND") == 0 ? li::LAYOUT_TND : li::LAYOUT_BSND;
    p.sparseCount = sel.sparseCount;
    p.sparseMode = sel.sparseMode;
    p.cmpRatio = sel.cmpRatio;
    p.returnValue = *attrs->GetAttrPointer<bool>(RETURN_VALUE);
    p.keyBlockStride = intAttr(KEY_STRIDE0);
    p.keyScaleBlockStride = intAttr(KEY_SCALE_STRIDE0);
    return ge::GRAPH_SUCCESS;
}

ge::graphStatus CheckDtypes(gert::TilingContext *ctx, Parsed &p, platform_ascendc::SocVersion soc)
{
    const bool a5 = soc == platform_ascendc::SocVersion::ASCEND950;
    const ge::DataType qk = a5 ? ge::DT_FLOAT8_E4M3FN : ge::DT_INT8;
    const ge::DataType scale = a5 ? ge::DT_FLOAT : ge::DT_FLOAT16;
    const char *qkName = a5 ? "float8_e4m3fn (Ascend 950)" : "int8 (Atlas A2/A3)";
    const char *scaleName = a5 ? "float32 (Ascend 950)" : "float16 (Atlas A2/A3)";
    const struct {
        size_t index;
        const char *name;
        ge::DataType want;
        const char *wantName;
    } rules[] = {{QUERY, "query", qk, qkName},
                 {KEY, "key", qk, qkName},
                 {WEIGHTS, "weights", scale, scaleName},
                 {QUERY_SCALE, "query_dequant_scale", scale, scaleName},
                 {KEY_SCALE, "key_dequant_scale", scale, scaleName}};
    for (const auto &r : rules) {
        const gert::CompileTimeTensorDesc *desc = ctx->GetInputDesc(r.index);
        CHECK_NOT_NULL(desc, p.op, r.name);
        CHECK_RULE(desc->GetDataType() == r.want, p.op, "%s must have dtype %s, got dtype id %d", r.name, r.wantName,
                   static_cast<int>(desc->GetDataType()));
    }
    p.quant = a5 ? li::QUANT_FP8 : li::QUANT_INT8;
    return ge::GRAPH_SUCCESS;
}

ge::graphStatus CheckShapes(gert::TilingContext *ctx, Parsed &p)
{
    const gert::StorageShape *qs = Shape(ctx, QUERY);
    const gert::StorageShape *ks = Shape(ctx, KEY);
    const gert::StorageShape *ws = Shape(ctx, WEIGHTS);
    const gert::StorageShape *qss = Shape(ctx, QUERY_SCALE);
    const gert::StorageShape *kss = Shape(ctx, KEY_SCALE);
    CHECK_NOT_NULL(qs, p.op, "query");
    CHECK_NOT_NULL(ks, p.op, "key");
    CHECK_NOT_NULL(ws, p.op, "weights");
    CHECK_NOT_NULL(qss, p.op, "query_dequant_scale");
    CHECK_NOT_NULL(kss, p.op, "key_dequant_scale");
    const gert::Shape &q = qs->GetOriginShape();
    const gert::Shape &k = ks->GetOriginShape();
    const size_t qRank = p.layoutQuery == li::LAYOUT_BSND ? 4 : 3;
    CHECK_RULE(q.GetDimNum() == qRank, p.op, "query must have %zu dims ([B, S1, N1, D] or [T, N1, D]), got %zu", qRank,
               q.GetDimNum());
    CHECK_RULE(q.GetDim(qRank - 2) == li::HEADS_Q, p.op, "query N1 must be %ld, got %ld", li::HEADS_Q,
               q.GetDim(qRank - 2));
    CHECK_RULE(q.GetDim(qRank - 1) == li::HEAD_DIM, p.op, "query D must be %ld, got %ld", li::HEAD_DIM,
               q.GetDim(qRank - 1));
    CHECK_RULE(k.GetDimNum() == 4, p.op, "key must have 4 dims [num_blocks, block_size, N2, D], got %zu",
               k.GetDimNum());
    CHECK_RULE(k.GetDim(2) == li::HEADS_K, p.op, "key N2 must be %ld, got %ld", li::HEADS_K, k.GetDim(2));
    CHECK_RULE(k.GetDim(3) == li::HEAD_DIM, p.op, "key D must be %ld, got %ld", li::HEAD_DIM, k.GetDim(3));
    p.numBlocks = k.GetDim(0);
    p.blockSize = k.GetDim(1);
    CHECK_RULE(p.blockSize > 0 && p.blockSize % li::BLOCK_SIZE_ALIGN == 0 && p.blockSize <= li::MAX_BLOCK_SIZE, p.op,
               "key block_size must be a multiple of %ld in [%ld, %ld], got %ld", li::BLOCK_SIZE_ALIGN,
               li::BLOCK_SIZE_ALIGN, li::MAX_BLOCK_SIZE, p.blockSize);
    for (const auto &pair : {std::make_pair(ws, "weights"), std::make_pair(qss, "query_dequant_scale")}) {
        const gert::Shape &s = pair.first->GetOriginShape();
        bool same = s.GetDimNum() == qRank - 1;
        for (size_t i = 0; same && i + 1 < qRank; ++i) {
            same = s.GetDim(i) == q.GetDim(i);
        }
        CHECK_RULE(same, p.op, "%s must have query's shape without D (%zu dims), got %zu dims", pair.second, qRank - 1,
                   s.GetDimNum());
    }
    const gert::Shape &kScale = kss->GetOriginShape();
    CHECK_RULE(kScale.GetDimNum() == 3 && kScale.GetDim(1) == p.blockSize && kScale.GetDim(2) == li::HEADS_K, p.op,
               "key_dequant_scale must have shape [num_blocks, %ld, %ld], got %zu dims", p.blockSize, li::HEADS_K,
               kScale.GetDimNum());
    // the kernel bounds block ids by key's block count: the scales must have as many blocks
    CHECK_RULE(kScale.GetDim(0) == p.numBlocks, p.op, "key_dequant_scale must have key's num_blocks = %ld, got %ld",
               p.numBlocks, kScale.GetDim(0));
    p.queryRows = q.GetDim(p.layoutQuery == li::LAYOUT_BSND ? 1 : 0);
    p.keyBlockStride = p.keyBlockStride > 0 ? p.keyBlockStride : p.blockSize * li::HEADS_K * li::HEAD_DIM;
    p.keyScaleBlockStride = p.keyScaleBlockStride > 0 ? p.keyScaleBlockStride : p.blockSize * li::HEADS_K;
    CHECK_RULE(p.keyBlockStride >= p.blockSize * li::HEAD_DIM, p.op,
               "key stride along blocks must be at least block_size * D = %ld, got %ld", p.blockSize * li::HEAD_DIM,
               p.keyBlockStride);
    CHECK_RULE(p.keyScaleBlockStride >= p.blockSize, p.op,
               "key_dequant_scale stride along blocks must be at least block_size = %ld, got %ld", p.blockSize,
               p.keyScaleBlockStride);
    return ge::GRAPH_SUCCESS;
}

ge::graphStatus CheckOptionalInputs(gert::TilingContext *ctx, Parsed &p)
{
    const gert::StorageShape *ask = OptionalShape(ctx, ASK);
    const gert::StorageShape *asq = OptionalShape(ctx, ASQ);
    const gert::StorageShape *table = OptionalShape(ctx, BLOCK_TABLE);
    const gert::StorageShape *meta = OptionalShape(ctx, METADATA);
    CHECK_RULE(ask != nullptr, p.op, "actual_seq_lengths_key must be given for layout_key PA_BSND, got None");
    CHECK_RULE(table != nullptr, p.op, "block_table must be given for layout_key PA_BSND, got None");
    CHECK_RULE(meta != nullptr, p.op, "metadata must be given on the NPU (from npu_vllm_quant_lightning_indexer_metadata), got None");
    const gert::Shape &k = ask->GetOriginShape();
    CHECK_RULE(k.GetDimNum() == 1, p.op, "actual_seq_lengths_key must be 1-D, got %zu dims", k.GetDimNum());
    p.batch = k.GetDim(0);
    const gert::Shape &q = Shape(ctx, QUERY)->GetOriginShape();
    if (p.layoutQuery == li::LAYOUT_BSND) {
        CHECK_RULE(q.GetDim(0) == p.batch, p.op, "actual_seq_lengths_key must have B = %ld elements, got %ld",
                   q.GetDim(0), p.batch);
        p.outputRows = p.batch * p.queryRows;
    } else {
        p.outputRows = p.queryRows;
    }
    if (asq != nullptr) {
        const gert::Shape &a = asq->GetOriginShape();
        const bool ok = a.GetDimNum() == 1 &&
                        (a.GetDim(0) == p.batch || (p.layoutQuery == li::LAYOUT_TND && a.GetDim(0) == p.batch + 1));
        CHECK_RULE(ok, p.op, "actual_seq_lengths_query must be 1-D with B = %ld%s elements, got %ld", p.batch,
                   p.layoutQuery == li::LAYOUT_TND ? " or B + 1" : "", a.GetDimNum() == 1 ? a.GetDim(0) : -1);
        p.queryLenCount = a.GetDim(0);
    } else {
        CHECK_RULE(p.layoutQuery == li::LAYOUT_BSND, p.op,
                   "actual_seq_lengths_query must be given for layout_query TND, got None");
    }
    const gert::Shape &t = table->GetOriginShape();
    CHECK_RULE(t.GetDimNum() == 2 && t.GetDim(0) == p.batch, p.op, "block_table must have shape [B = %ld, max_blocks], got %zu dims",
               p.batch, t.GetDimNum());
    p.maxBlocksPerSeq = t.GetDim(1);
    const gert::Shape &m = meta->GetOriginShape();
    CHECK_RULE(m.GetDimNum() == 1 && m.GetDim(0) == li::METADATA_LEN, p.op, "metadata must have shape [%d], got %zu dims",
               li::METADATA_LEN, m.GetDimNum());
    const gert::StorageShape *out = ctx->GetOutputShape(0);
    CHECK_NOT_NULL(out, p.op, "sparse_indices");
    const gert::Shape &o = out->GetOriginShape();
    CHECK_RULE(o.GetDim(o.GetDimNum() - 1) == p.sparseCount, p.op, "sparse_indices last dim must be sparse_count = %ld, got %ld",
               p.sparseCount, o.GetDim(o.GetDimNum() - 1));
    return ge::GRAPH_SUCCESS;
}

ge::graphStatus TilingVllmQuantLightningIndexer(gert::TilingContext *ctx)
{
    Parsed p;
    p.op = ctx->GetNodeName();
    const platform_ascendc::PlatformAscendC platform(ctx->GetPlatformInfo());
    const platform_ascendc::SocVersion soc = platform.GetSocVersion();
    CHECK_RULE(soc == platform_ascendc::SocVersion::ASCEND910B || soc == platform_ascendc::SocVersion::ASCEND910_93 ||
                   soc == platform_ascendc::SocVersion::ASCEND950,
               p.op, "SoC must be Atlas A2, Atlas A3 or Ascend 950, got SocVersion %d", static_cast<int>(soc));
    RETURN_IF_FAILED(CheckAttrs(ctx, p, soc));
    RETURN_IF_FAILED(CheckDtypes(ctx, p, soc));
    RETURN_IF_FAILED(CheckShapes(ctx, p));
    RETURN_IF_FAILED(CheckOptionalInputs(ctx, p));

    const uint32_t aicNum = platform.GetCoreNumAic();
    const uint32_t aivNum = platform.GetCoreNumAiv();
    uint64_t ubBytes = 0;
    platform.GetCoreMemSize(platform_ascendc::CoreMemType::UB, ubBytes);
    CHECK_RULE(aicNum > 0 && aivNum > 0, p.op, "platform must report AI cores, got %u cube / %u vector", aicNum, aivNum);
    const int64_t usableUb = li::UsableUbBytes(static_cast<int64_t>(ubBytes));
    const int64_t vecKeys = li::ChooseVecKeys(li::NPU_K_BLOCK, p.sparseCount, usableUb);
    CHECK_RULE(vecKeys > 0, p.op, "UB of %ld usable bytes cannot hold the vector plan for sparse_count %ld", usableUb,
               p.sparseCount);

    VllmQuantLightningIndexerTilingData data;
    data.set_batch(p.batch);
    data.set_queryRows(p.queryRows);
    data.set_outputRows(p.outputRows);
    data.set_layoutQuery(p.layoutQuery);
    data.set_queryLenCount(p.queryLenCount);
    data.set_numBlocks(p.numBlocks);
    data.set_blockSize(p.blockSize);
    data.set_maxBlocksPerSeq(p.maxBlocksPerSeq);
    data.set_keyBlockStride(p.keyBlockStride);
    data.set_keyScaleBlockStride(p.keyScaleBlockStride);
    data.set_sparseCount(p.sparseCount);
    data.set_sparseMode(p.sparseMode);
    data.set_cmpRatio(p.cmpRatio);
    data.set_returnValue(p.returnValue ? 1 : 0);
    data.set_vecKeys(vecKeys);
    data.set_aicNum(aicNum);
    data.set_mm1Offset(0);
    data.set_partialOffset(li::Mm1WorkspaceBytes(aicNum));
    data.SaveToBuffer(ctx->GetRawTilingData()->GetData(), ctx->GetRawTilingData()->GetCapacity());
    ctx->GetRawTilingData()->SetDataSize(data.GetDataSize());

    ctx->SetBlockDim(platform.CalcTschBlockDim(aivNum, aicNum, aivNum));
    ctx->SetTilingKey(li::IndexerTilingKey(p.quant, p.layoutQuery, p.returnValue));
    ctx->SetScheduleMode(1);  // batch mode: every core starts together, which SyncAll requires
    size_t *workspace = ctx->GetWorkspaceSizes(1);
    workspace[0] = platform.GetLibApiWorkSpaceSize() + li::IndexerUserWorkspaceBytes(aicNum, p.sparseCount);
    return ge::GRAPH_SUCCESS;
}

ge::graphStatus TilingParseVllmQuantLightningIndexer(gert::TilingParseContext *)
{
    return ge::GRAPH_SUCCESS;
}

}  // namespace

IMPL_OP_OPTILING(VllmQuantLightningIndexer)
    .Tiling(TilingVllmQuantLightningIndexer)
    .TilingParse<VllmQuantLightningIndexerCompileInfo>(TilingParseVllmQuantLightningIndexer);

}  // namespace optiling
