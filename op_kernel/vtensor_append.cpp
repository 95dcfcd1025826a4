// Kernel of VtensorAppend (custom::vtensor_append_): copies states [B, T, H, D] into the virtual
// cache at rows positions[b] + t. Rows are split over vector cores (li::AppendRows); each pass
// moves up to rowsPerPass rows GM -> UB -> GM, double-buffered. A row whose target falls outside
// [0, S_cap), or at or past limits[b] when the limits are given (the tokens with memory mapped
// behind them), is skipped (li::CacheRowOffset): a bad position never writes out of bounds, nor
// into the unmapped part of a virtual cache's reservation. (The binding counts the skipped rows.)
#include "kernel_operator.h"
#include "vtensor_append_math.h"

namespace {

using namespace AscendC;

template <typename POS>
class VtensorAppendKernel {
public:
    __aicore__ inline void Init(GM_ADDR cache, GM_ADDR states, GM_ADDR positions, GM_ADDR limits,
                                const VtensorAppendTilingData &t)
    {
        shape_ = {t.batch, t.tokens, t.capacity, t.rowElems, t.cacheStrideB, t.cacheStrideS};
        rowsPerPass_ = t.rowsPerPass;
        cache_.SetGlobalBuffer(reinterpret_cast<__gm__ uint8_t *>(cache));
        states_.SetGlobalBuffer(reinterpret_cast<__gm__ uint8_t *>(states));
        positions_ = reinterpret_cast<__gm__ POS *>(positions);
        limits_ = t.hasLimits != 0 ? reinterpret_cast<__gm__ int64_t *>(limits) : nullptr;
        elemBytes_ = t.rowBytes / t.rowElems;
        rowBytes_ = t.rowBytes;
        pipe_.InitBuffer(queue_, 2, rowsPerPass_ * li::AlignUp(rowBytes_, 32));
    }

    __aicore__ inline void Process()
    {
        const li::AppendRange r = li::AppendRows(shape_, GetBlockIdx(), GetBlockNum());
        for (int64_t row = r.begin; row < r.end; row += rowsPerPass_) {
            const int64_t n = li::Min(rowsPerPass_, r.end - row);
            LocalTensor<uint8_t> buf = queue_.AllocTensor<uint8_t>();
            // states rows are contiguous: one copy in.
            DataCopyPad(buf, states_[row * rowBytes_], DataCopyExtParams(static_cast<uint16_t>(n),
                        static_cast<uint32_t>(rowBytes_), 0, 0, 0), DataCopyPadExtParams<uint8_t>());
            queue_.EnQue(buf);
            buf = queue_.DeQue<uint8_t>();
            for (int64_t i = 0; i < n; ++i) {
                const int64_t b = (row + i) / shape_.tokens;
                const int64_t t = (row + i) % shape_.tokens;
                const int64_t limit = limits_ != nullptr ? limits_[b] : shape_.capacity;
                const int64_t dst = li::CacheRowOffset(shape_, b, static_cast<int64_t>(positions_[b]) + t, limit);
                if (dst >= 0) {
                    DataCopyPad(cache_[dst * elemBytes_], buf[i * li::AlignUp(rowBytes_, 32)],
                                DataCopyExtParams(1, static_cast<uint32_t>(rowBytes_), 0, 0, 0));
                }
            }
            queue_.FreeTensor(buf);
        }
    }

private:
    TPipe pipe_;
    TQueBind<TPosition::VECIN, TPosition::VECOUT, 2> queue_;
    GlobalTensor<uint8_t> cache_;
    GlobalTensor<uint8_t> states_;
    __gm__ POS *positions_ = nullptr;
    __gm__ int64_t *limits_ = nullptr;
    li::AppendShape shape_{};
    int64_t rowsPerPass_ = 0;
    int64_t rowBytes_ = 0;
    int64_t elemBytes_ = 0;
};

}  // namespace

extern "C" __global__ __aicore__ void vtensor_append(GM_ADDR cache, GM_ADDR states, GM_ADDR positions,
                                                     GM_ADDR limits, GM_ADDR cacheOut, GM_ADDR workspace,
                                                     GM_ADDR tiling)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    GET_TILING_DATA(t, tiling);
    if (TILING_KEY_IS(0)) {
        VtensorAppendKernel<int32_t> op;
        op.Init(cache, states, positions, limits, t);
        op.Process();
    } else if (TILING_KEY_IS(1)) {
        VtensorAppendKernel<int64_t> op;
        op.Init(cache, states, positions, limits, t);
        op.Process();
    }
}
