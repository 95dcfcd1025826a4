"""The CUDA indexer called directly on checked arguments (no dispatcher, so CPU tensors work),
shared by the offline checks: check_cuda_interpreted.py runs it under the Triton interpreter,
check_cuda_compile.py with every launch recorded instead of run; and the phase-2 options both
take on the command line."""
import dataclasses

from custom_ops import _checks
from custom_ops.backends.cuda import indexer as cuda_indexer

# TopkConfig fields the offline checks take as `--name N`, with their help
TOPK_OPTIONS = {
    "buckets": "buckets of the bucket ordering",
    "bucket_max_rows": "rows up to which top-k is ordered by buckets (else torch.sort)",
    "min_segment": "keys per phase-2 segment at least",
    "block_n": "elements per phase-2 scan step",
    "threshold_step": "threshold bits per bisection step (1, 2)",
    "samples": "threshold samples per row (at least)",
    "threshold_bits": "bits of the top-k threshold bisected",
    "place_rank_rows": "rows from which the bucket order places and ranks in one launch",
    "place_rank_programs": "place-rank programs of all rows together",
}


def add_topk_options(ap, *names):
    for name in names:
        ap.add_argument("--" + name.replace("_", "-"), type=int, help=TOPK_OPTIONS[name])


def with_topk_options(tc, opts):
    """tc with each TOPK_OPTIONS field given on the command line (more samples than
    tc.max_samples raise it too)."""
    changes = {n: getattr(opts, n) for n in TOPK_OPTIONS if getattr(opts, n, None) is not None}
    if "samples" in changes:
        changes["max_samples"] = max(changes["samples"], tc.max_samples)
    return dataclasses.replace(tc, **changes)


def call(args, kwargs, workers):
    full = _checks.indexer_arguments(kwargs)
    p = _checks.check_indexer(*args, **full)
    return cuda_indexer.indexer(*args, full["actual_seq_lengths_query"],
                                full["actual_seq_lengths_key"], full["block_table"], None,
                                p=p, workers=workers)
