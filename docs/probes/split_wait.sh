#!/usr/bin/env bash
# The Gluon int8 decode loop: the first half's epilogue under the second half's dot (NOTES,
# session 31; one device call, ~5 min). Today the next_n=4 consumer issues both halves' dots
# and waits for both (WARPGROUP.DEPBAR.LE gsb0, 0x0) before either epilogue.
#   split (split_wait.patch): wait for the first half (num_outstanding=1), sum and store it,
#     then wait for the second. Offline (sm_90): same registers (168), no stack, loop 548 -> 549
#     instructions; ptxas hoists the second wait to ~87 instructions after the first (34 I2FP,
#     31 FMNMX, 18 FFMA of the first half's ~290), whatever the PTX order (a barrier, or the first
#     half's sums passed through the wait, did not pin it).
#   pair (split_wait_pair.patch = split + int8 next_n=2 as two one-token halves, split_dot in
#     the pair config): the next_n=2 dot (N=128) becomes two N=64 dots with the same overlap;
#     loop 285 -> 300 instructions, 168 registers, no stack; the interpreter's 12 cases pass
#     (the Triton kernel at NQ=2 SPLIT stands in there).
# Predicted: B64 64K next_n=4 int8 -2 to -5 % if the SM issues those instructions while the
# tensor cores run the second dot, +-0 if session 10's non-overlap is the hardware's; next_n=2
# likewise for pair; fp8 and next_n=1 unchanged (other paths). Trees:
#   for t in base split pair; do mkdir -p .probe/$t && git archive HEAD | tar -x -C .probe/$t; done
#   (cd .probe/split && patch -p1 < ../../docs/probes/split_wait.patch)
#   (cd .probe/pair && patch -p1 < ../../docs/probes/split_wait_pair.patch)
# (Not `git apply`: inside .probe, a directory of this repository, it skips every file of a
# git-format patch and still exits 0; session 32's run of this script measured base three
# times over.)
# Run with `carry: [".probe"]`:
export PYTHONUNBUFFERED=1
for t in split pair; do
  ( cd .probe/$t && PYTHONPATH=$PWD:$PWD/scripts timeout 200 python3 -m pytest -x -q \
      -p no:cacheprovider -n 8 tests/test_indexer_cuda.py -k "gluon or twenty or kernel_paths" \
      2>&1 | tail -1 )
done
export PYTHONPATH=$PWD:$PWD/scripts
timeout 330 python3 scripts/ab_trees.py .probe/base .probe/split .probe/pair \
    --cases B64-64K-n4,B64-16K-n4,B8-64K-n4,B64-64K-n2,B64-16K-n2,B8-64K-n2,B64-64K-n1,B64-64K-n4-fp8 \
    --rounds 3 2>&1 | tail -10
