#!/usr/bin/env bash
# Which row counts place_rank should take (NOTES, session 30; one device call, ~4 min). Ran in
# session 31 on trees from 97ed92b (docs/bench/session31_h200.log, call 3; pr256 kept, so the
# first sed below no longer matches HEAD). Trees:
#   mkdir -p .probe/base && git archive HEAD | tar -x -C .probe/base
#   for t in pr256 pr256j2 pr32; do mkdir -p .probe/$t && git archive HEAD | tar -x -C .probe/$t; done
#   sed -i 's/    bucket_max_rows: int = 128/    bucket_max_rows: int = 256/' .probe/pr256/custom_ops/backends/cuda/configs.py .probe/pr256j2/custom_ops/backends/cuda/configs.py
#   sed -i 's/    place_rank_programs: int = 4 \* 64/    place_rank_programs: int = 8 * 64/' .probe/pr256j2/custom_ops/backends/cuda/configs.py
#   sed -i 's/    place_rank_rows: int = 64/    place_rank_rows: int = 32/' .probe/pr32/custom_ops/backends/cuda/configs.py
# pr256: 256 rows (B64 next_n=4) ordered by place_rank, one program a row, instead of merge,
# torch.sort and unpack (~53 µs at B64 64K n4 under ncu, session 20); in session 24 place +
# rank lost to the sort there by 6.5 µs, and place_rank gained 5.3 µs over them at 128 rows
# (B32 64K n4). pr256j2: the same with two programs a row (also 8 at 64 rows, which lost 2 %).
# pr32: place_rank from 32 rows (B32 64K n1, B8 64K n4, B16 64K n2). Predicted: pr256 within
# ±5 µs of the sort at B64 64K n4 (the segments' bucket atomics ~+10 µs against the order's
# -10 to -15), pr32 ±1 µs. A win for the n4 ratio bar needs tens of µs: this only decides the
# row ranges. Run with `carry: [".probe"]`:
export PYTHONPATH=$PWD:$PWD/scripts PYTHONUNBUFFERED=1
timeout 500 python3 scripts/ab_trees.py .probe/base .probe/pr256 .probe/pr256j2 .probe/pr32 \
    --cases B64-64K-n4,B64-64K-n4-fp8,B64-16K-n4,B64-4K-n4,B32-64K-n1,B8-64K-n4,B16-64K-n2 \
    --rounds 3 2>&1 | tail -8
