"""Phase 2 of the CUDA indexer: exact top-k of each workspace row, in SPEC §1.4's order.

One file per step (keys.py says how a score and its index become one ordered int64 key):

1. `threshold` (grid rows): t0 from a strided sample of the row's scores.
2. `segments` (grid rows × G): each segment's keys above t0, compacted in index order.
3. The order, two ways chosen by row count (the same result): `buckets` (each program places
   and ranks the bucket groups of its share of the positions; up to
   TopkConfig.bucket_max_rows rows) or `sort` (merge, torch.sort, unpack).
   Either way, if a row's candidate count misses [k, CAP] (ties, adversarial rows), one
   program runs the exact radix select of `exact` instead and keeps exactly k (ties by
   index); `ties` fills rows whose keys at t0 complete the k.

`windows` merges top-k lists for calls scored in windows of keys (SPEC §1.6).
"""
from .buckets import _indexer_buckets_kernel
from .segments import _indexer_segments_kernel
from .sort import _indexer_merge_kernel, _indexer_unpack_kernel
from .threshold import _indexer_threshold_kernel
from .windows import _indexer_window_merge_kernel

__all__ = ["_indexer_buckets_kernel", "_indexer_merge_kernel", "_indexer_segments_kernel",
           "_indexer_threshold_kernel", "_indexer_unpack_kernel", "_indexer_window_merge_kernel"]
