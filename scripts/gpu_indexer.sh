#!/usr/bin/env bash
# One device call: CUDA correctness (first), memcheck on a subset, random calls against the golden
# (scripts/fuzz_indexer.py), the long-context and fallback-rows checks, then the benchmark.
#   [TESTS=0] [MEMCHECK=0] [FUZZ=0] [LONG=0] [FALLBACK=0] [TIES=1] bash scripts/gpu_indexer.sh [quick|full|profile|sweep|none]
# (TIES=1 adds scripts/bench_ties.py: rows of tied scores, ~1 min)
# Logs, CSV and PNG go to $OUT.
set -o pipefail
OUT=${OUT:-/tmp/gpu_indexer}
mkdir -p "$OUT"
export PYTHONPATH=$PWD:$PYTHONPATH PYTHONUNBUFFERED=1
MODE=${1:-full}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$OUT/gpu.txt"
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"

if [ "${TESTS:-1}" = 1 ]; then
  timeout "${TEST_TIMEOUT:-400}" python3 -m pytest -x -q -p no:cacheprovider -n 8 \
      tests/test_indexer_cuda.py tests/test_indexer.py tests/test_graph.py tests/test_metadata.py \
      tests/test_cuda_launch.py tests/test_cuda_plans.py \
      -k cuda 2>&1 | tee "$OUT/pytest.log" | tail -25
  echo "pytest exit ${PIPESTATUS[0]}"
fi
if [ "${MEMCHECK:-1}" = 1 ]; then
  # no caching allocator: every tensor is its own allocation, so memcheck sees any overrun
  PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout "${MEMCHECK_TIMEOUT:-300}" compute-sanitizer --tool memcheck \
      --error-exitcode 17 python3 -m pytest -x -q -p no:cacheprovider tests/test_indexer.py \
      -k "cuda and (corner or ties_exact or seed_example or sweep and (TND or k2048))" 2>&1 \
      | tee "$OUT/memcheck.log" | tail -6
  echo "memcheck exit ${PIPESTATUS[0]}"
  # the key-window path (what a CUDA graph over a wide table runs), called eagerly, and the
  # one-launch bucket order (the subset above has fewer rows than place_rank_rows; the
  # top-k options run it with one program a row, as at 256 rows)
  PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout "${MEMCHECK_TIMEOUT:-300}" compute-sanitizer --tool memcheck \
      --error-exitcode 17 python3 -m pytest -x -q -p no:cacheprovider tests/test_indexer_cuda.py \
      -k "key_windows_outside_capture or place_rank or topk_options" 2>&1 \
      | tee "$OUT/memcheck_windows.log" | tail -6
  echo "memcheck (key windows, place_rank, top-k options) exit ${PIPESTATUS[0]}"
fi
if [ "${FUZZ:-1}" = 1 ]; then
  # random calls beyond the tests' sizes against the golden (float64 on the GPU)
  timeout $(( ${FUZZ_SECONDS:-60} + 90 )) python3 scripts/fuzz_indexer.py --seconds "${FUZZ_SECONDS:-60}" \
      --seed "${FUZZ_SEED:-0}" 2>&1 | tee "$OUT/fuzz.log" | tail -3
  echo "fuzz exit ${PIPESTATUS[0]}"
fi
if [ "${LONG:-1}" = 1 ]; then
  # B=64, 128K keys, next_n=4, int8 and fp8: every row against float64 torch scores
  timeout "${LONG_TIMEOUT:-150}" python3 scripts/check_cuda_long_context.py 2>&1 | tee "$OUT/long_context.log"
  echo "long-context check exit ${PIPESTATUS[0]}"
fi
if [ "${FALLBACK:-1}" = 1 ]; then
  # no row of the benchmark's inputs may take the exact top-k fallback (it shows as an outlier
  # in the benchmark, not as a wrong result)
  timeout "${FALLBACK_TIMEOUT:-150}" python3 scripts/check_cuda_fallback_rows.py 2>&1 \
      | tee "$OUT/fallback_rows.log" | grep -E "MISSED" | head -5
  echo "fallback-rows check exit ${PIPESTATUS[0]}"
fi
if [ "${TIES:-0}" = 1 ]; then
  # rows of tied scores (few distinct key vectors, or mostly zero keys) beside the untied call
  timeout "${TIES_TIMEOUT:-150}" python3 scripts/bench_ties.py 2>&1 | tee "$OUT/bench_ties.log"
  echo "bench_ties exit ${PIPESTATUS[0]}"
fi
case "$MODE" in
  profile) python3 scripts/bench_indexer.py --out "$OUT" --quick --profile --sweep 2>&1 | tee "$OUT/bench.log" ;;
  sweep) timeout "${BENCH_TIMEOUT:-540}" python3 scripts/bench_indexer.py --out "$OUT" --sweep --only sweep 2>&1 | tee "$OUT/bench.log" ;;
  quick) python3 scripts/bench_indexer.py --out "$OUT" --quick 2>&1 | tee "$OUT/bench.log" ;;
  full) timeout "${BENCH_TIMEOUT:-540}" python3 scripts/bench_indexer.py --out "$OUT" 2>&1 | tee "$OUT/bench.log" ;;
esac
