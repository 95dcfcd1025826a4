#!/usr/bin/env bash
# The Gluon int8 next_n=4 loop: the first half's epilogue under the second half's dot (NOTES,
# session 31; one device call, ~3 min). Today the consumer issues both halves' dots and waits
# for both (WARPGROUP.DEPBAR.LE gsb0, 0x0) before either epilogue; the patch waits for the first
# (num_outstanding=1), runs its head sums and stores, then waits for the second. Offline (sm_90):
# same registers (168), no stack, loop 548 -> 549 instructions; ptxas hoists the second wait to
# ~87 instructions after the first (34 I2FP, 31 FMNMX, 18 FFMA of the first half's ~290), whatever
# the PTX order (a barrier or the first half's sums passed through the wait did not pin it).
# Predicted: B64 64K next_n=4 int8 -2 to -5 % if the SM issues those instructions while the
# tensor cores run the second dot, +-0 if session 10's non-overlap is the hardware's; fp8 and
# next_n = 1, 2 unchanged (other paths). Trees:
#   mkdir -p .probe/base .probe/split && git archive HEAD | tar -x -C .probe/base
#   git archive HEAD | tar -x -C .probe/split && (cd .probe/split && git apply ../../docs/probes/split_wait.patch)
# Run with `carry: [".probe"]`:
export PYTHONPATH=$PWD/.probe/split:$PWD/scripts PYTHONUNBUFFERED=1
( cd .probe/split && timeout 200 python3 -m pytest -x -q -p no:cacheprovider -n 8 \
    tests/test_indexer_cuda.py -k "gluon or twenty" 2>&1 | tail -2 )
export PYTHONPATH=$PWD:$PWD/scripts
timeout 300 python3 scripts/ab_trees.py .probe/base .probe/split \
    --cases B64-64K-n4,B64-16K-n4,B64-4K-n4,B8-64K-n4,B64-64K-n1,B64-64K-n4-fp8 \
    --rounds 3 2>&1 | tail -8
