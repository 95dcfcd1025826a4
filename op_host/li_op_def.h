// Pieces of the op definitions that the indexer and its metadata op share, so that the two
// declare the selection attributes identically (same names, defaults and order as the torch schemas).
#ifndef CUSTOM_OPS_LI_OP_DEF_H
#define CUSTOM_OPS_LI_OP_DEF_H

#include "register/op_def_registry.h"

namespace ops {

// layout_query .. cmp_ratio, in schema order.
inline void AddSelectionAttrs(OpDef &def)
{
    def.Attr("layout_query").AttrType(OPTIONAL).String("BSND");
    def.Attr("layout_key").AttrType(OPTIONAL).String("PA_BSND");
    def.Attr("sparse_count").AttrType(OPTIONAL).Int(2048);
    def.Attr("sparse_mode").AttrType(OPTIONAL).Int(3);
    def.Attr("pre_tokens").AttrType(OPTIONAL).Int(9223372036854775807);
    def.Attr("next_tokens").AttrType(OPTIONAL).Int(9223372036854775807);
    def.Attr("cmp_ratio").AttrType(OPTIONAL).Int(1);
}

inline OpAICoreConfig DynamicShapeConfig()
{
    OpAICoreConfig config;
    config.DynamicCompileStaticFlag(true).DynamicRankSupportFlag(true).DynamicShapeSupportFlag(true)
        .NeedCheckSupportFlag(false).PrecisionReduceFlag(true);
    return config;
}

// Ops whose dtypes do not change with the SoC.
inline void AddAllSocs(OpDef &def)
{
    const OpAICoreConfig config = DynamicShapeConfig();
    def.AICore().AddConfig("ascend910b", config);
    def.AICore().AddConfig("ascend910_93", config);
    def.AICore().AddConfig("ascend950", config);
}

}  // namespace ops

#endif  // CUSTOM_OPS_LI_OP_DEF_H
