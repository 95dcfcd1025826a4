"""Run the CUDA backend's Triton kernels on CPU tensors under the Triton interpreter and compare
each result with the golden (SPEC §1.5): a way to develop and check the kernels without a GPU.

    pip install --target /tmp/tri triton==3.6.0 "numpy<2.4"   # the 3.6 interpreter needs numpy < 2.4
    PYTHONPATH=/tmp/tri python scripts/check_cuda_interpreted.py [--bucket-max-rows N]
        [--min-segment N] [--block-k N] [--workspace BYTES] [--rotate] [--wide-table]
        [--key-window KEYS] [CASE ...]

The cases cover every phase-1 path (one token, stacked tokens, per-token loop), page-contiguous
and gathered key tiles, fp8, BSND and TND; every case has at most 40 rows, so the top-k takes the
bucket order unless `--bucket-max-rows 0` forces the sort; `--threshold-bits 1` sends most rows
to the exact fallback; `--wide-table` gives every block table 50 unused columns and sizes the
logits rows by the lengths (configs.SIZE_BY_LENGTHS_BYTES), as a large eager call does;
`--samples 512` makes the longer rows' thresholds read phase 1's copy of every 8th score (at
4096 samples only rows beyond 28K keys do, and no case here is that long); `--key-window 512`
runs every call as a CUDA-graph capture over a wide table would (configs.GRAPH_LOGITS_BYTES):
keys scored in windows of 512 and each window's top-k merged into the previous ones';
`--tied-keys N` replaces the cache's key vectors by N distinct ones (scores of N values: tie
groups of thousands), `--tied-keys 0` zeroes 97 % of them (scores of exactly 0).
Slow (about 45 s for all); the interpreter accepts a few things the compiler rejects, so a GPU
run stays the proof.
"""
import argparse
import dataclasses
import os

os.environ["TRITON_INTERPRET"] = "1"

import torch  # noqa: E402

from custom_ops.backends.cuda import configs, indexer as cuda_indexer  # noqa: E402
from custom_ops.testing import assert_indexer_close, make_indexer_inputs, tie_keys  # noqa: E402
from cuda_indexer_call import add_topk_options, call, with_topk_options  # noqa: E402

FP8 = torch.float8_e4m3fn
CASES = [
    dict(q_lens=[1, 1, 1], k_lens=[5000, 100, 0], sparse_count=512),
    dict(q_lens=[2, 1, 2], k_lens=[3000, 1500, 700], sparse_count=256),
    dict(q_lens=[4, 3, 1], k_lens=[3000, 2500, 9], sparse_count=512),
    dict(q_lens=[3, 4], k_lens=[4100, 600], sparse_count=300, block_size=16),
    dict(q_lens=[6, 2], k_lens=[2000, 1000], sparse_count=256),
    dict(q_lens=[3, 2], k_lens=[2000, 1000], layout="TND", sparse_count=256),
    dict(q_lens=[1], k_lens=[6000], sparse_count=64, block_size=128),
    dict(q_lens=[2, 2], k_lens=[1200, 900], sparse_count=256, ties=True),
    dict(q_lens=[1], k_lens=[3000], sparse_count=2048, qk_dtype=FP8),
    dict(q_lens=[40], k_lens=[800], layout="TND", sparse_count=128),
    dict(q_lens=[30, 3], k_lens=[900, 400], layout="TND", sparse_count=128, qk_dtype=FP8),
    dict(q_lens=[2, 1], k_lens=[900, 400], layout="TND", sparse_count=128, qk_dtype=FP8),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cases", nargs="*", type=int, help="case numbers (default: all)")
    add_topk_options(ap, "buckets", "bucket_max_rows", "min_segment", "place_rank_rows",
                     "place_rank_programs")
    ap.add_argument("--block-k", type=int, help="key tile of phase 1 (every path)")
    ap.add_argument("--workspace", type=int, help="workspace budget in bytes (forces chunking)")
    ap.add_argument("--tma", action="store_true", help="key tiles by TMA descriptor where contiguous")
    ap.add_argument("--scale-pairs", action="store_true", help="2-byte key scales read as int32 pairs")
    ap.add_argument("--stack", type=int, help="tokens stacked per dot on every path (1: per token)")
    ap.add_argument("--rotate", action="store_true",
                    help="every path's epilogue deferred to the next tile (rotate_epilogue)")
    ap.add_argument("--wide-table", action="store_true",
                    help="block tables 50 columns wider than the lengths need; rows sized by length")
    ap.add_argument("--key-window", type=int,
                    help="keys per window, every call treated as captured in a CUDA graph")
    ap.add_argument("--tied-keys", type=int,
                    help="the cache's keys as N distinct vectors (0: 97 %% of them zero)")
    add_topk_options(ap, "threshold_step", "samples", "threshold_bits")
    opts = ap.parse_args()
    configs.TOPK = with_topk_options(configs.TOPK, opts)
    for key, lc in list(configs.LOGITS.items()):
        if opts.block_k is not None:
            lc = dataclasses.replace(lc, block_k=opts.block_k)
        if opts.stack is not None:
            lc = dataclasses.replace(lc, max_stack=opts.stack)
        flags = dict(tma=opts.tma, scale_pairs=opts.scale_pairs,
                     rotate_epilogue=opts.rotate)  # on where given, else as set
        configs.LOGITS[key] = dataclasses.replace(
            lc, **{name: on or getattr(lc, name) for name, on in flags.items()})
    if opts.workspace is not None:
        cuda_indexer.WORKSPACE_BYTES = opts.workspace
    if opts.wide_table:
        configs.SIZE_BY_LENGTHS_BYTES = -1
    if opts.key_window is not None:
        configs.GRAPH_LOGITS_BYTES, configs.MIN_WINDOW_KEYS = 0, opts.key_window
        cuda_indexer._in_graph_or_compile = lambda: True
    for i, case in enumerate(CASES):
        if opts.cases and i not in opts.cases:
            continue
        args, kwargs = make_indexer_inputs(**case, return_value=True, seed=i)
        if opts.tied_keys is not None:
            tie_keys(args, opts.tied_keys, seed=i)
        if opts.wide_table:  # block ids past the cache: never read
            bt = kwargs["block_table"]
            kwargs["block_table"] = torch.cat([bt, bt.new_full((bt.shape[0], 50), 1 << 30)], 1)
        out = call(args, kwargs, workers=6)
        assert_indexer_close(*out, args, kwargs, exact=case.get("ties", False))
        print(f"case {i} ok: {case}", flush=True)


if __name__ == "__main__":
    main()
