#!/usr/bin/env bash
# The kept split loop with its second wait pinned below the first half's epilogue (session 33,
# prepared offline; one device call, ~6 min). In the kept loop ptxas hoists the second
# WARPGROUP.DEPBAR to ~89 instructions after the first, so most of the first half's epilogue
# runs after both dots. split_pinned.patch puts that epilogue in a branch that is always taken
# (`if row0 >= 0`): ptxas schedules within a basic block, so the wait stays below it. Offline
# (sm_90): the wait after the whole first-half epilogue (64 I2FP / FMNMX / FFMA, 8 STG), loop
# 586 instructions (549 kept), 168 registers, 8-byte stack (one LDL a tile), no C7514. This
# isolates what session 33's two-tile loop (+7.2 %) mixed with twice the code and a spill:
# does a warpgroup's own overlap of its epilogue with its second dot buy time?
# Predicted: B64 64K n4 -1 to -3 % if it does; +1 to +7 % like the two-tile loop if not.
# Third tree, pad (place_rank_padding.patch): place_rank's padding stores through
# keys._store_padding like the other top-k kernels (offline: 149 registers instead of 145, still
# 3 programs per SM); adopt it only if B64 64K n1 and B64 4K n2 stay within noise.
# Trees:
#   rm -rf .probe; mkdir -p .probe/base .probe/pin .probe/pad
#   for t in base pin pad; do git archive HEAD | tar -x -C .probe/$t; done
#   (cd .probe/pin && patch -p1 < ../../docs/probes/split_pinned.patch)
#   (cd .probe/pad && patch -p1 < ../../docs/probes/place_rank_padding.patch)
#   diff -rq .probe/base/custom_ops .probe/pin/custom_ops   # one file differs (and for pad)
# The pin tree's tests and memcheck follow the A/B (~6-9 min in all). Run with `carry: [".probe"]`:
export PYTHONUNBUFFERED=1
export PYTHONPATH=$PWD:$PWD/scripts
timeout 200 python3 scripts/ab_trees.py .probe/base .probe/pin .probe/pad \
    --cases B64-64K-n4,B64-16K-n4,B8-64K-n4,B64-64K-n2,B64-4K-n2,B64-64K-n1,B32-64K-n4 \
    --rounds 3 2>&1 | tail -8
cd .probe/pin && export PYTHONPATH=$PWD:$PWD/scripts
timeout 250 python3 -m pytest -x -q -p no:cacheprovider -n 8 tests/test_indexer_cuda.py 2>&1 | tail -2
PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 120 compute-sanitizer --tool memcheck --error-exitcode 17 \
    python3 -m pytest -x -q -p no:cacheprovider tests/test_indexer_cuda.py \
    -k "gluon_logits and int8 and (stacked or pair)" 2>&1 | tail -3
