#!/usr/bin/env bash
# The ring's stage and use from an unsigned tile count (docs/probes/ring_unsigned.patch; NOTES,
# session 29). Build the trees here (repository root, on a72d612 or a commit it applies to):
#   mkdir -p .probe/base && git archive HEAD | tar -x -C .probe/base
#   mkdir -p .probe/ring && git archive HEAD | tar -x -C .probe/ring && (cd .probe/ring && patch -p1 < ../../docs/probes/ring_unsigned.patch)
# then run this in one device call with `carry: [".probe"]` (~4 min): the Gluon tests in the
# patched tree, then an A/B on the fp8 two-CTA cases (the variant whose loop shrank), fp8 calls
# below the two-CTA size (other variants, loops unchanged) and int8 B64 64K (5 stages: loop
# unchanged). Predicted: fp8 B64 64K n1 -3 to -8 µs if the two-CTA pass is bound by its issue
# (loop -9 %, spill gone), the rest within noise. If it gains: the CUDA test files and memcheck
# (`TESTS=1 MEMCHECK=1 FUZZ=0 LONG=0 FALLBACK=0 bash scripts/gpu_indexer.sh none` on the
# applied tree), then the full benchmark.
export PYTHONPATH=$PWD:$PWD/scripts PYTHONUNBUFFERED=1
(cd .probe/ring && PYTHONPATH=$PWD timeout 150 python3 -m pytest -x -q -p no:cacheprovider \
    -n 8 tests/test_indexer_cuda.py -k "gluon" 2>&1 | tail -2)
timeout 330 python3 scripts/ab_trees.py .probe/base .probe/ring \
    --cases B64-64K-n1-fp8,B64-128K-n1-fp8,B32-128K-n1-fp8,B64-16K-n1-fp8,B1-64K-n1-fp8,B64-64K-n1 \
    --rounds 3 2>&1 | tail -7
