"""Phase 2 of the CUDA indexer: exact top-k of each workspace row, in SPEC §1.4's order.

One file per step (keys.py says how a score and its index become one ordered int64 key):

1. `threshold` (grid rows): t0 from a strided sample of the row's scores.
2. `segments` (grid rows × G): each segment's keys above t0, compacted in index order.
3. The order, two ways chosen by row count (the same result): `buckets` (place, then rank;
   up to TopkConfig.bucket_max_rows rows; from place_rank_rows on both in one launch,
   `place_rank`) or `sort` (merge, torch.sort, unpack).
   Either way, if a row's candidate count misses [k, CAP] (ties, adversarial rows), one
   program runs the exact radix select of `exact` instead and keeps exactly k (ties by
   index); `ties` fills rows whose keys at t0 complete the k.

`windows` merges top-k lists for calls scored in windows of keys (SPEC §1.6).
"""
from .buckets import _indexer_place_kernel, _indexer_rank_kernel
from .place_rank import _indexer_place_rank_kernel
from .segments import _indexer_segments_kernel
from .sort import _indexer_merge_kernel, _indexer_unpack_kernel
from .threshold import _indexer_threshold_kernel
from .windows import _indexer_window_merge_kernel

__all__ = ["_indexer_merge_kernel", "_indexer_place_kernel", "_indexer_place_rank_kernel",
           "_indexer_rank_kernel", "_indexer_segments_kernel", "_indexer_threshold_kernel",
           "_indexer_unpack_kernel", "_indexer_window_merge_kernel"]
