#!/usr/bin/env bash
# fp8 one-token calls at two CTAs per worker: which pairs run fast, and uneven shares of a
# worker's tiles between its two CTAs (NOTES, session 27). Build the trees here (repository
# root), then run this in one device call with `carry: [".probe"]` (~4 min):
#   mkdir -p .probe/ps && git archive HEAD | tar -x -C .probe/ps && (cd .probe/ps && patch -p1 < ../../docs/probes/pair_speed.patch)
#   mkdir -p .probe/base && git archive HEAD | tar -x -C .probe/base
#   for w in 32 36 40 44; do mkdir -p .probe/w$w && git archive HEAD | tar -x -C .probe/w$w &&
#     (cd .probe/w$w && patch -p1 < ../../docs/probes/two_cta_weights.patch &&
#      sed -i "s/gluon_two_ctas_weight: int = 32/gluon_two_ctas_weight: int = $w/" custom_ops/backends/cuda/configs.py); done
#   mkdir -p .probe/tt && git archive HEAD | tar -x -C .probe/tt && (cd .probe/tt && patch -p1 < ../../docs/probes/triton_tile_shares.patch)
# The last A/B: the Triton logits kernel's programs sharing key tiles instead of units
# (docs/probes/triton_tile_shares.patch; correct under the interpreter, 36 case runs; not run
# on a GPU): the fp8 paths that keep the Triton kernel.
export PYTHONPATH=$PWD:$PWD/scripts PYTHONUNBUFFERED=1
(cd .probe/ps && PYTHONPATH=$PWD timeout 120 python3 ../../docs/probes/pair_speed_probe.py 64 65536 fp8)
timeout 300 python3 scripts/ab_trees.py .probe/base .probe/w32 .probe/w36 .probe/w40 .probe/w44 \
    --cases B64-64K-n1-fp8,B64-128K-n1-fp8,B64-64K-n1 --rounds 2 2>&1 | tail -4
timeout 200 python3 scripts/ab_trees.py .probe/base .probe/tt \
    --cases B64-16K-n1-fp8,B8-64K-n1-fp8,B32-64K-n1-fp8,B64-64K-n2-fp8,B64-64K-n4-fp8,B8-16K-n2-fp8 --rounds 2 2>&1 | tail -7
