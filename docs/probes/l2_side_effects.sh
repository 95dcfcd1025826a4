#!/usr/bin/env bash
# Session 35's open question, prepared for the next session (one device call, ~8 min): does the
# L2 set-aside that keeping the logits in L2 takes (custom_ops/backends/cuda/l2.py, opt-in)
# slow the kernels around the indexer?
# Session 35 measured its own gain (every call's scores stored evict_last then; same-call A/B: B64 64K n1 int8 -4.1 %,
# 128K -2.7 %, 16K -1.2 %, B8 64K -1.8 %, n4 -1.6 %, prefill T4096 32K +2.0 %; at the device's
# maximum set-aside, 37.5 MiB, +7 to +11 % everywhere but n4), then in its full run the
# torch-native implementation ~16 % slower than sessions 30-34 and the copy bandwidth at the
# end 2.50 TB/s (3.77-3.94 before): across runs, not same-call.
# Modes (l2_side_effects.py's docstring): base:off (HEAD as it runs by default), base:aside (30 MB
# set aside, nothing kept: the set-aside alone), base:keep (CUSTOM_OPS_L2_SET_ASIDE_MB=30: the
# logits of calls from 8 MiB kept and discarded; smaller calls store as by default), all:keep
# (every call keeps and discards, small ones too).
# Predicted: if the set-aside itself costs other kernels, aside's copy/native "after" figures
# match keep's; if only the kept lines' traffic does, aside matches off; the "reset" column
# shows whether lines left persisting (none should be: every evict_last store is discarded) matter.
# Then the landed form's own tests on the GPU (it has not run there) and its same-call A/B
# (keep30: a tree whose configs.L2_SET_ASIDE_MB is 30, i.e. the opt-in as a default).
# Ran in session 36 on dbc177f (docs/bench/session36_h200.log, call 1): the set-aside alone cut the
# copy 4.16 -> 2.58 TB/s and slowed native 20 %, so 10a5a6d took the L2 code out; to run it on later
# code, apply docs/probes/l2_keep_logits.patch to each tree (patch -p1) before the seds below.
# Trees: rm -rf .probe; for t in base all keep30; do mkdir -p .probe/$t;
#     git archive HEAD | tar -x -C .probe/$t; done
#   sed -i 's/^L2_KEEP_MIN_BYTES = 8 << 20/L2_KEEP_MIN_BYTES = 0/' .probe/all/custom_ops/backends/cuda/configs.py
#   sed -i 's/^L2_SET_ASIDE_MB = 0.0/L2_SET_ASIDE_MB = 30.0/' .probe/keep30/custom_ops/backends/cuda/configs.py
#   diff -rq .probe/base .probe/all; diff -rq .probe/base .probe/keep30   # configs.py each
# Run with `carry: [".probe"]` (~8 min):
export PYTHONUNBUFFERED=1
export PYTHONPATH=$PWD:$PWD/scripts
timeout 100 python3 -m pytest -q -p no:cacheprovider tests/test_cuda_l2.py 2>&1 | tail -3
timeout 300 python3 docs/probes/l2_side_effects.py .probe/base:off .probe/base:aside \
    .probe/base:keep .probe/all:keep
timeout 180 python3 scripts/ab_trees.py .probe/base .probe/keep30 \
    --cases B64-64K-n1,B64-64K-n1-fp8,B64-128K-n1,B64-64K-n4,B8-64K-n1,T4096-32K --rounds 2 2>&1 | tail -7
