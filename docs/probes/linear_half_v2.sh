#!/usr/bin/env bash
# The |x| form with linear halves, second version (NOTES, session 32; one device call, ~5 min).
# linear_half_v2.patch = linear_half.patch (session 32's real version, refuted: B64 64K n4
# +1.8 %) with three changes found after its run:
#   - the digit sum in float with per-digit power-of-two scales (exact products, the sum's
#     order fixed by the accumulator layout), as in the probe that gained -4.7 %: the int32
#     pair join cost the probe +14 µs (call 9);
#   - the form decided once per op call and passed to its chunks and windows (a 6-token call
#     chunked into 3-row windows had switched form: test_chunked_workspace_equals_whole);
#   - the digits allocated at their real shape while warming (the Gluon kernel's TMA descriptor
#     over a one-element stand-in; likely the two graph tests that failed).
# Offline: interpreter 12/12 with --linear-half (also --stack 1), Triton paths bit-equal,
# whole vs chunked bit-equal (BSND, TND; 4 and 6 tokens); sm_90 compile: Gluon int8 n4 loop
# 479 instructions, 40-byte stack, n2 259. Predicted: B64 64K n4 -2 to -4 % (probe -4.7 %, less
# ~4 µs of prepass and the later stage release), B1 64K n2 +3 to +4 µs (the prepass): if small
# calls lose, set LogitsConfig.linear_half_min_rows (in the patch; rows, not logits, so that an
# eager call and its graph take one form). Trees:
#   rm -rf .probe/base .probe/lin2 .probe/ylast; mkdir -p .probe/base .probe/lin2 .probe/ylast
#   for t in base lin2 ylast; do git archive HEAD | tar -x -C .probe/$t; done
#   (cd .probe/lin2 && patch -p1 < ../../docs/probes/linear_half_v2.patch)
#   (cd .probe/ylast && patch -p1 < ../../docs/probes/abs_linear_ylast.patch)  # the racy probe:
#   what the same machine gives the form at best (wrong scores, speed only)
# (`patch -p1`, not `git apply`: inside .probe git skips a git-format patch's files silently)
# Run with `carry: [".probe"]`:
export PYTHONUNBUFFERED=1
( cd .probe/lin2 && PYTHONPATH=$PWD:$PWD/scripts timeout 330 python3 -m pytest -q \
    -p no:cacheprovider -n 8 tests/test_indexer_cuda_linear.py tests/test_indexer_cuda.py \
    2>&1 | tail -8 )
export PYTHONPATH=$PWD:$PWD/scripts
timeout 250 python3 scripts/ab_trees.py .probe/base .probe/lin2 .probe/ylast \
    --cases B64-64K-n4,B64-16K-n4,B8-64K-n4,B64-64K-n3,B64-64K-n2,B1-64K-n2,B64-64K-n1 \
    --rounds 3 2>&1 | tail -8
