#!/usr/bin/env bash
# The "fewer score bytes" design's two unknowns on the H200, B64 64K next_n=1 (session 36):
# 1. Which store patterns recover the score stores' cost (logits kernel alone; all stores masked
#    off: int8 -10.6 us, fp8 -6.2, store_cost.sh). Trees: base (HEAD), nostore
#    (no_score_stores.patch), nosample (store_nosample.patch: the every-8th sample copy not
#    stored), sectors (store_sectors.patch: 37 % of the 32-byte sectors stored whole, spread
#    evenly, no sample copy: what storing every sector holding a candidate would write at
#    ~5 % candidates), runs (store_runs.patch: 56 scores at the start of every 512 keys, 11 %,
#    no sample copy: the bytes of compacted per-unit candidate slots).
#    Predicted (int8): nosample -1 to -2 us, sectors -4 to -7 if the cost follows the bytes,
#    runs -8 to -10.
# 2. What a sample pre-pass costs: docs/probes/sample_prepass_probe.py scores S keys of every
#    page (64 rows x 1024 pages). Predicted: S=1 4-6 us, S=8 12-16 us.
# Trees: rm -rf .probe; for t in base nostore nosample sectors runs; do mkdir -p .probe/$t;
#     git archive HEAD | tar -x -C .probe/$t; done
#   for t in nostore nosample sectors runs; do p=$t; [ $t = nostore ] && p=no_score_stores || p=store_$t
#     (cd .probe/$t && patch -p1 < ../../docs/probes/$p.patch); diff -rq .probe/base .probe/$t; done
# Run with `carry: [".probe"]` (~5 min):
export PYTHONUNBUFFERED=1
export PYTHONPATH=$PWD:$PWD/scripts
for d in int8 fp8; do
  timeout 200 python3 docs/probes/dry_consumer_probe.py --dtype $d --rounds 2 \
      .probe/base .probe/nostore .probe/nosample .probe/sectors .probe/runs 2>&1 | tail -11
done
timeout 150 python3 docs/probes/sample_prepass_probe.py 2>&1 | tail -12
