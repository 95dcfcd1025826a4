#!/usr/bin/env bash
# place_rank's programs a row at 256 rows beyond session 39's floor (one device call, ~3 min).
# Session 39 kept at least 2 programs a row where a row has >= 4 segments (capped at G // 2):
# B64 64K next_n=4 int8 -4.5 / -2.5 µs, fp8 -3.8, 16K -2.5, 128K -1.7 against 1; 4K (G = 2)
# lost 4.3 µs with 2. This asks whether 4 a row (G = 4 at 64K and 128K, cap G instead of G // 2)
# gains again or loses as 4K did: each program reads every candidate of its row, and ranks the
# groups starting in its quarter of the positions. Predicted: 64K n4 -1 to +3 µs (the
# candidate reads grow with J; the ranking shortens), 128K alike, 4K/16K unchanged or worse.
# Trees (patch-free: one line of configs.place_rank_programs changed by sed):
#   rm -rf .probe; mkdir -p .probe/base .probe/j4
#   for t in base j4; do git archive HEAD | tar -x -C .probe/$t; done
#   sed -i 's|min(tc.place_rank_row_programs, g // 2)|min(4, g) if g >= 4 else 1|' \
#       .probe/j4/custom_ops/backends/cuda/configs.py
#   diff -r .probe/base .probe/j4   # that one line
# Run with `carry: [".probe"]`:
export PYTHONUNBUFFERED=1
export PYTHONPATH=$PWD:$PWD/scripts
timeout 240 python3 scripts/ab_trees.py .probe/base .probe/j4 \
    --cases B64-64K-n4,B64-64K-n4-fp8,B64-128K-n4,B64-16K-n4,B64-4K-n4 --rounds 3 2>&1 | tail -7
cd .probe/j4 && export PYTHONPATH=$PWD
timeout 150 python3 -m pytest -x -q -p no:cacheprovider -n 8 tests/test_indexer_cuda.py \
    tests/test_indexer.py -k "cuda and (place_rank or topk_options or sweep or corner)" 2>&1 | tail -2
