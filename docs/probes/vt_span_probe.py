"""Why bench_vtensor's vt-append took 11.9 µs of device time a step at 64K tokens and 3.0 at
every shorter length (session 37; prepared in session 38 without a device).

Hypothesis: the functional append writes one token of 16 sequences with one `copy_` into an
`as_strided` view of the virtual cache. At 64K the cache's capacity (65536 + 7172 tokens of
2 KiB a sequence) puts the last sequence's row 15 · 148.9 MB = 2.23 GB after the first, past
2^31 bytes, where ATen's CUDA copy cannot use 32-bit offsets and splits the iteration
(`TensorIterator::with_32bit_indexing`) into several launches. At 32K (1.23 GB) and in the
static cache at 64K (65537 tokens: 2.01 GB) it stays one launch. The driver calls of the chunk
crossings are the same at every length (one chunk per sequence per timed run), so they would
not single out 64K.

Each line: device µs a step (queued behind a sleep, as bench_vtensor times it) and CUDA kernels
a step (torch profiler) of one token written to 16 sequences of a plain buffer shaped as the
virtual cache, below and above the 2^31-byte span, by: the functional op's `copy_`; `copy_` in
two halves of 8 sequences; `index_copy_` along the sequence axis of a [16, H·D] view (its
offsets are 64-bit: the indexed axis's stride is not in the iterator); the in-place op's Triton
kernel with a positions tensor. Predicted: `copy_` above the span ~2-4 launches and ~6-12 µs,
everything else one launch and ~3 µs. If so, `_grow` (vtensor/ops.py) should write through the
one-launch form whose host cost is lowest (Triton's launcher costs 15-40 µs of host time a call:
NOTES "Session 15"): `index_copy_` with an index tensor kept by the cache, which
vt_index_copy.patch does (vt_span.sh times it in bench_vtensor).

    PYTHONPATH=$PWD:$PWD/scripts python3 docs/probes/vt_span_probe.py
"""
import torch
from torch.profiler import ProfilerActivity, profile

import bench_vtensor as bv
from custom_ops.vtensor.triton_append import vtensor_append_cuda

BATCH, HEADS, HEAD_DIM = bv.BATCH, bv.HEADS, bv.HEAD_DIM
ROW = HEADS * HEAD_DIM  # elements of one token of one sequence


def kernels_per_step(step, steps=8) -> float:
    step()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            step()
        torch.cuda.synchronize()
    return sum(e.count for e in prof.key_averages() if e.device_type.name == "CUDA") / steps


def main():
    new = bv.states()
    index = torch.arange(BATCH, device="cuda")
    print(f"{'case':28s} {'span GB':>8s} {'device us':>10s} {'kernels':>8s}")
    for capacity in (32768 + 7172, 65536 + 1, 65536 + 7172):
        buf = torch.empty(BATCH, capacity, HEADS, HEAD_DIM, device="cuda", dtype=bv.DTYPE)
        at = capacity - 2  # the written token (a fixed one: the time does not depend on it)
        stride = buf.stride()
        dst = buf.as_strided(new.shape, stride, at * stride[1])
        flat = buf.as_strided((BATCH, ROW), (stride[0], 1), at * stride[1])
        positions = torch.full((BATCH,), at, device="cuda", dtype=torch.int64)
        span = (BATCH - 1) * stride[0] * buf.element_size() / 1e9
        cases = {
            "copy_ (the functional op)": lambda: dst.copy_(new),
            "copy_ in two halves": lambda: (dst[:BATCH // 2].copy_(new[:BATCH // 2]),
                                            dst[BATCH // 2:].copy_(new[BATCH // 2:])),
            "index_copy_": lambda: flat.index_copy_(0, index, new.view(BATCH, ROW)),
            "triton (vtensor_append_)": lambda: vtensor_append_cuda(buf, new, positions,
                                                                    None, None),
        }
        for name, step in cases.items():
            buf[:, at].zero_()
            step()
            assert torch.equal(buf[:, at], new[:, 0]), f"{name} did not write the token"
            _, device_us = bv.per_step_us(step)
            print(f"{name:28s} {span:8.2f} {device_us:10.1f} {kernels_per_step(step):8.1f}",
                  flush=True)


if __name__ == "__main__":
    main()
