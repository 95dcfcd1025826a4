#!/usr/bin/env bash
# Leaner Gluon consumer loops (NOTES, session 29; both patches compiled offline only):
#   ring_unsigned.patch    each pair's ring stage and use from an unsigned tile count (_ring);
#                          two-CTA fp8 consumer loop 184 / 177 -> 167 / 166 instructions, its
#                          8-byte spill gone; other consumer loops unchanged
#   ring_store_mask.patch  the same plus stores without the redundant "key >= segment start"
#                          test; two-CTA fp8 164 / 163, every Gluon consumer loop 1-7 shorter
# Build the trees here (repository root, on a72d612 or a commit both apply to):
#   mkdir -p .probe/base && git archive HEAD | tar -x -C .probe/base
#   mkdir -p .probe/ring && git archive HEAD | tar -x -C .probe/ring && (cd .probe/ring && patch -p1 < ../../docs/probes/ring_unsigned.patch)
#   mkdir -p .probe/ringm && git archive HEAD | tar -x -C .probe/ringm && (cd .probe/ringm && patch -p1 < ../../docs/probes/ring_store_mask.patch)
#   cp -r .probe/ringm .probe/ringm2 && sed -i 's/gluon_two_ctas_keys=1 << 22/gluon_two_ctas_keys=1 << 20/' .probe/ringm2/custom_ops/backends/cuda/configs.py
# (ringm2: fp8 one-token calls from 1M logits on, not 4M, at two CTAs per SM: the threshold was
# set when that loop was 188 instructions and the Triton kernel's 215; B64 16K and B32 64K are
# the calls it moves)
# then run this in one device call with `carry: [".probe"]` (~6 min): the Gluon tests in the
# superset tree (ringm), then an A/B on the fp8 two-CTA cases (the variant whose loop shrank most),
# smaller fp8 calls and int8 cases. Predicted: fp8 B64 64K n1 -3 to -8 µs if the two-CTA pass is
# bound by its issue (loop -9 to -11 %), the rest within noise or slightly faster. If one gains:
# apply it, then the CUDA test files and memcheck (`TESTS=1 MEMCHECK=1 FUZZ=0 LONG=0 FALLBACK=0
# bash scripts/gpu_indexer.sh none`), then the full benchmark.
export PYTHONPATH=$PWD:$PWD/scripts PYTHONUNBUFFERED=1
(cd .probe/ringm && PYTHONPATH=$PWD timeout 150 python3 -m pytest -x -q -p no:cacheprovider \
    -n 8 tests/test_indexer_cuda.py -k "gluon" 2>&1 | tail -2)
timeout 400 python3 scripts/ab_trees.py .probe/base .probe/ring .probe/ringm .probe/ringm2 \
    --cases B64-64K-n1-fp8,B64-128K-n1-fp8,B32-128K-n1-fp8,B64-16K-n1-fp8,B32-64K-n1-fp8,B64-64K-n1,B64-64K-n4 \
    --rounds 3 2>&1 | tail -8
