#!/usr/bin/env bash
# Session 35's open question, prepared for the next session (one device call, ~4 min): does the
# L2 set-aside that `l2_keep_discard.patch` takes slow the kernels around the indexer?
# Session 35 measured the patch's own gain (same-call A/B, 3 rounds: B64 64K n1 int8 -4.1 %,
# 128K -2.7 %, 16K -1.2 %, B8 64K -1.8 %, n4 -1.6 %, prefill T4096 32K +2.0 %; at the device's
# maximum set-aside, 37.5 MiB, +7 to +11 % everywhere but n4), then in its full run the
# torch-native implementation ~16 % slower than sessions 30-34 and the copy bandwidth at the
# end 2.50 TB/s (3.77-3.94 before): across runs, not same-call.
# Modes: base (HEAD), base:30 (the set-aside alone), l2 (the patch), l2all (the patch,
# discarding at every size: no persisting line left behind by calls under 8 MiB).
# Predicted: if the set-aside itself costs other kernels, base:30's copy/native "after" match
# l2's; if stale persisting lines do, l2all and the "reset" column recover base's figures.
# Trees: rm -rf .probe; for t in base l2 l2all; do mkdir -p .probe/$t;
#   git archive HEAD | tar -x -C .probe/$t; done
#   for t in l2 l2all; do (cd .probe/$t && patch -p1 < ../../docs/probes/l2_keep_discard.patch); done
#   sed -i 's/^L2_KEEP_MIN_BYTES = 8 << 20/L2_KEEP_MIN_BYTES = 0/' .probe/l2all/custom_ops/backends/cuda/configs.py
# Run with `carry: [".probe"]`:
export PYTHONUNBUFFERED=1
export PYTHONPATH=$PWD:$PWD/scripts
timeout 420 python3 docs/probes/l2_side_effects.py .probe/base .probe/base:30 .probe/l2 .probe/l2all
