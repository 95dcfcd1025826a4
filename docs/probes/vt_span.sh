#!/usr/bin/env bash
# RESOLVED in session 39 (commit 00e8622: index_copy_ only past the 2^31-byte span; NOTES "The 2^31-byte span"); kept for the record.
# bench_vtensor's vt-append at 64K tokens (11.9 µs of device time a step against 3.0 at every
# shorter length, session 37), in one device call (~3-4 min; prepared in session 38 without a
# device). First docs/probes/vt_span_probe.py (its docstring: the 2^31-byte span hypothesis and
# the predictions); then bench_vtensor at 32K and 64K on HEAD and on the tree with
# vt_index_copy.patch (the functional append writes each sequence's new tokens as rows of a
# [B, T·H·D] view with index_copy_ along B, so B's stride never enters the copy's iteration);
# then that tree's vtensor CUDA tests. Predicted with the patch: 64K ~3 µs of device time a step,
# 32K unchanged (±0.3 µs), wall time within ±1 µs (one ATen op either way).
# Trees (patch -p1, never git apply: NOTES "Next session"):
#   rm -rf .probe; mkdir -p .probe/vt; git archive HEAD | tar -x -C .probe/vt
#   (cd .probe/vt && patch -p1 < ../../docs/probes/vt_index_copy.patch)
# Run with `carry: [".probe"]`:
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/vt_span}
mkdir -p "$OUT/base" "$OUT/vt"
export PYTHONPATH=$PWD:$PWD/scripts
timeout 120 python3 docs/probes/vt_span_probe.py
timeout 120 python3 scripts/bench_vtensor.py --out "$OUT/base" --lengths 32768,65536 2>&1 | tail -22
cd .probe/vt && export PYTHONPATH=$PWD:$PWD/scripts
timeout 120 python3 scripts/bench_vtensor.py --out "$OUT/vt" --lengths 32768,65536 2>&1 | tail -22
OUT=$OUT/vt timeout 180 bash scripts/gpu_vtensor.sh tests 2>&1 | tail -4
