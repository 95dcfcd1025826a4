#!/usr/bin/env bash
# fp8 one-token calls at two CTAs per worker with work sharing inside each worker (NOTES,
# session 28): worker w's CTAs become w and w + W (the first- and second-placed CTA on an SM,
# whose paces differ by 6.5-9.6 %), and a pair done with its share takes parts only from its
# worker's four pairs, so taken parts stay in the worker's rows. Build the trees here
# (repository root, on the commit this patch was made on, 02dcb7d, or one it applies to):
#   mkdir -p .probe/base && git archive HEAD | tar -x -C .probe/base
#   mkdir -p .probe/ws && git archive HEAD | tar -x -C .probe/ws && (cd .probe/ws && patch -p1 < ../../docs/probes/fp8_worker_sharing.patch)
#   mkdir -p .probe/ws2 && git archive HEAD | tar -x -C .probe/ws2 && (cd .probe/ws2 && patch -p1 < ../../docs/probes/fp8_worker_sharing_lean.patch)
# (ws2 = ws plus a leaner sharing consumer: the loader flags a part that starts another row in
# its descriptor, so the consumer keeps no last row; the descriptor is read at the loop's end;
# offline its stack 32 -> 16 B, loops 198 / 190 -> 197 / 190, one in-loop reload fewer. It
# changes the int8 sharing consumer too, whose loops stay 177 / 176 instructions.)
# then run this in one device call with `carry: [".probe"]` (~5 min). Offline (sm_90): the
# sharing consumer keeps its 32 B spill at 104 registers and its loop is 198 / 190
# instructions against the plain two-CTA consumer's 188 / 181, so the pass may lose ~3-5 % of
# pace for the tail it recovers (~10 µs at B64 64K if the ends close to the mean + 3 µs).
export PYTHONPATH=$PWD:$PWD/scripts PYTHONUNBUFFERED=1
for t in ws ws2; do (cd .probe/$t && PYTHONPATH=$PWD timeout 150 python3 -m pytest -x -q \
    -p no:cacheprovider -n 8 tests/test_indexer_cuda.py -k "gluon" 2>&1 | tail -2); done
timeout 300 python3 scripts/ab_trees.py .probe/base .probe/ws .probe/ws2 \
    --cases B64-64K-n1-fp8,B64-128K-n1-fp8,B32-128K-n1-fp8,B64-64K-n1 --rounds 3 2>&1 | tail -5
