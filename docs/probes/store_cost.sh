#!/usr/bin/env bash
# What phase 1's score stores cost at next_n = 1 and 4 (session 35 measured int8 n1 only: ~11
# µs of 144 for 17 MB of DRAM writes). At next_n=4 the logits are 4x the bytes (67 MB at B64
# 64K) and exceed L2, so keeping them there (l2.py) cannot help; if their stores cost ~4x as
# much there, writing fewer score bytes (e.g. only the scores above a threshold estimated from
# a sample of keys scored first) is the lever for the next_n=4 / next_n=1 bar as well.
# Trees: base (HEAD), nostore (HEAD + no_score_stores.patch: every score store masked off at
# run time; phase 2 then reads unwritten logits, so only the logits kernel's time counts).
#   rm -rf .probe; for t in base nostore; do mkdir -p .probe/$t; git archive HEAD | tar -x -C .probe/$t; done
#   (cd .probe/nostore && patch -p1 < ../../docs/probes/no_score_stores.patch); diff -rq .probe/base .probe/nostore
# Predicted: int8 n1 base - nostore ~10 µs (session 35: 144.4 against 134.3 with the
# consumers' stores masked); n4 30-45 µs if the cost scales with the bytes, less if the
# compute-bound n4 pass hides them. Run with `carry: [".probe"]` (~4 min):
export PYTHONUNBUFFERED=1
export PYTHONPATH=$PWD:$PWD/scripts
for d in int8 fp8; do
  for n in 1 4; do
    timeout 150 python3 docs/probes/dry_consumer_probe.py --dtype $d --next-n $n --rounds 2 \
        .probe/base .probe/nostore 2>&1 | tail -5
  done
done
