#!/usr/bin/env bash
# The Gluon int8 split loop two key tiles a step (session 33; one device call, ~6 min).
# Today (split_wait_pair) each tile issues both query halves' dots, waits for the first, runs its
# epilogue, waits for the second: ptxas hoists that second wait to ~89 instructions after the
# first, so only ~89 of the first half's ~290 epilogue instructions run under the second dot.
# split_two_tiles.patch handles two tiles a step (an odd last tile alone): offline (sm_90) the
# second wait sits after the whole first-half epilogue in both tiles (254 and 234 instructions
# under the dot), loop 1120 instructions per two tiles (549 per tile today), 168 registers,
# 32-byte stack (two LDL a step). Carrying a dot in flight across the loop's back edge (the
# second half's epilogue under the next tile's first dot) made ptxas serialise every wgmma
# (C7514), and within a step ptxas sinks the next tile's dot below that epilogue anyway.
# Predicted: B64 64K n4 -1 to -4 % if the longer overlap is real time, +-0 if the other
# warpgroup already filled that gap. Trees:
#   rm -rf .probe; mkdir -p .probe/base .probe/two
#   git archive HEAD | tar -x -C .probe/base; git archive HEAD | tar -x -C .probe/two
#   (cd .probe/two && patch -p1 < ../../docs/probes/split_two_tiles.patch)
#   diff -rq .probe/base/custom_ops .probe/two/custom_ops   # one file differs
# Run with `carry: [".probe"]`:
export PYTHONUNBUFFERED=1
export PYTHONPATH=$PWD:$PWD/scripts
timeout 150 python3 scripts/ab_trees.py .probe/base .probe/two \
    --cases B64-64K-n4,B64-16K-n4,B8-64K-n4,B1-64K-n4,B64-64K-n2,B64-16K-n2,B64-64K-n1 \
    --rounds 3 2>&1 | tail -8
cd .probe/two && export PYTHONPATH=$PWD:$PWD/scripts
timeout 250 python3 -m pytest -x -q -p no:cacheprovider -n 8 tests/test_indexer_cuda.py 2>&1 | tail -2
PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 60 compute-sanitizer --tool memcheck --error-exitcode 17 \
    python3 -m pytest -x -q -p no:cacheprovider tests/test_indexer_cuda.py \
    -k "gluon or kernel_paths" 2>&1 | tail -3
