#!/usr/bin/env bash
# Where the int8 next_n=1 logits pass loses its time (session 34's finding, prepared for the
# next session; one device call, ~6 min). Session 34 measured, B64 64K n1 int8, logits kernel
# alone: the loads alone (consumers score nothing, dry_consumer.patch) 127-131 µs, the
# consumers alone (loaders copy nothing, no_copy_loader.patch) 119.6 µs, both 143-144 µs: the
# pass loses ~15 µs to overlapping two near-equal times. The consumer takes ~955 cycles per
# 173-instruction tile per warpgroup, so it waits far more than it issues. This call asks
# whether four consumer warpgroups per SM (int8 as two CTAs per worker, int8_two_ctas.patch:
# 80 registers, no spill, 83 KB shared, offline) cut the consumers' own time and, if they do,
# why session 25's whole-call A/B of that layout measured noise.
# Predicted: two's consumers alone ~70-90 µs; its loads alone ~127 (unchanged); together
# ~130-135 if the overlap loss shrinks with the gap. A whole-call gain of >= 5 µs at B64 64K
# would be the first lever for the next_n=1 bars since session 30. Then the same split for fp8
# (two CTAs per worker already; fp8dry = dry_consumer_fp8.patch), whose bar is ~7 µs away.
# Trees:
#   rm -rf .probe; for t in base dry noload two twodry twonoload fp8dry; do mkdir -p .probe/$t;
#     git archive HEAD | tar -x -C .probe/$t; done
#   for t in dry twodry; do (cd .probe/$t && patch -p1 < ../../docs/probes/dry_consumer.patch); done
#   (cd .probe/fp8dry && patch -p1 < ../../docs/probes/dry_consumer_fp8.patch)
#   for t in noload twonoload; do (cd .probe/$t && patch -p1 < ../../docs/probes/no_copy_loader.patch); done
#   for t in two twodry twonoload; do (cd .probe/$t && patch -p1 < ../../docs/probes/int8_two_ctas.patch); done
#   diff -rq .probe/base .probe/twodry   # three files differ
# Run with `carry: [".probe"]`:
export PYTHONUNBUFFERED=1
export PYTHONPATH=$PWD:$PWD/scripts
timeout 260 python3 docs/probes/dry_consumer_probe.py .probe/base .probe/dry .probe/noload \
    .probe/two .probe/twodry .probe/twonoload 2>&1 | tail -19
timeout 130 python3 docs/probes/dry_consumer_probe.py --dtype fp8 .probe/base .probe/fp8dry \
    .probe/noload 2>&1 | tail -10
timeout 180 python3 scripts/ab_trees.py .probe/base .probe/two \
    --cases B64-64K-n1,B64-128K-n1,B32-64K-n1,B8-64K-n1,B1-64K-n1 --rounds 3 2>&1 | tail -6
