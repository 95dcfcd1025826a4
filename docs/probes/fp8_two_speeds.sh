#!/usr/bin/env bash
# fp8 one-token calls at two CTAs per worker: which pairs run fast, and uneven shares of a
# worker's tiles between its two CTAs (NOTES, session 27). Build the trees here (repository
# root), then run this in one device call with `carry: [".probe"]` (~4 min):
#   mkdir -p .probe/ps && git archive HEAD | tar -x -C .probe/ps && (cd .probe/ps && patch -p1 < ../../docs/probes/pair_speed.patch)
#   mkdir -p .probe/base && git archive HEAD | tar -x -C .probe/base
#   for w in 32,32,32,32 36,36,28,28 40,40,24,24 36,28,36,28 40,24,40,24; do t=.probe/w${w//,/_}
#     mkdir -p $t && git archive HEAD | tar -x -C $t && (cd $t && patch -p1 < ../../docs/probes/two_cta_weights.patch &&
#     sed -i "s/gluon_two_ctas_weights: tuple = (32, 32, 32, 32)/gluon_two_ctas_weights: tuple = (${w//,/, })/" custom_ops/backends/cuda/configs.py); done
# (weights of 128 for a worker's four pairs: the first-placed CTA's SUB 0, SUB 1, then the
# second CTA's; 36,36,28,28 and 40,40,24,24 bet on the first-placed CTA being the fast one,
# 36,28,36,28 and 40,24,40,24 on SUB 0; 32,32,32,32 is the CTA pairing alone)
#   mkdir -p .probe/tt && git archive HEAD | tar -x -C .probe/tt && (cd .probe/tt && patch -p1 < ../../docs/probes/triton_tile_shares.patch)
# The last A/B: the Triton logits kernel's programs sharing key tiles instead of units
# (docs/probes/triton_tile_shares.patch; correct under the interpreter, 36 case runs; not run
# on a GPU): the fp8 paths that keep the Triton kernel.
export PYTHONPATH=$PWD:$PWD/scripts PYTHONUNBUFFERED=1
(cd .probe/ps && PYTHONPATH=$PWD timeout 120 python3 ../../docs/probes/pair_speed_probe.py 64 65536 fp8)
timeout 330 python3 scripts/ab_trees.py .probe/base .probe/w32_32_32_32 .probe/w36_36_28_28 \
    .probe/w40_40_24_24 .probe/w36_28_36_28 .probe/w40_24_40_24 \
    --cases B64-64K-n1-fp8,B64-128K-n1-fp8 --rounds 2 2>&1 | tail -3
timeout 200 python3 scripts/ab_trees.py .probe/base .probe/tt \
    --cases B64-16K-n1-fp8,B8-64K-n1-fp8,B32-64K-n1-fp8,B64-64K-n2-fp8,B64-64K-n4-fp8,B8-16K-n2-fp8 --rounds 2 2>&1 | tail -7
