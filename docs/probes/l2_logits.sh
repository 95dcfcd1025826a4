#!/usr/bin/env bash
# Session 35: keep phase 1's logits in L2 and drop them there once phase 2 is done.
# Session 35's split of the int8 n1 logits pass (B64 64K, kernel alone): loads alone 129 µs,
# loads + score stores 140, loads + dots + epilogue 134, all 144; ncu: 19.6 MB DRAM writes
# against 2.4 without the stores. Trees: evl (score and sample stores evict_last), evld (evl +
# a kernel after place_rank that discards the workspace's L2 lines, discard.global.L2: dead
# scratch never written back), evldp (evld + 30 MB of L2 set aside for persisting lines).
# Predicted: evl alone ±1 µs (the lines are written back later, session 25); evld/evldp −5 to
# −11 µs at B64 64K n1 if the lines stay in L2, nothing at n4 (67 MB of logits).
# Trees: rm -rf .probe; for t in base evl evld evldp; do mkdir -p .probe/$t;
#   git archive HEAD | tar -x -C .probe/$t; done
#   for t in evl evld evldp; do (cd .probe/$t && patch -p1 < ../../docs/probes/logits_evict_last.patch); done
#   for t in evld evldp; do (cd .probe/$t && patch -p1 < ../../docs/probes/logits_discard.patch); done
#   (cd .probe/evldp && patch -p1 < ../../docs/probes/logits_persist.patch)
export PYTHONUNBUFFERED=1
export PYTHONPATH=$PWD:$PWD/scripts
R=$PWD
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct
for t in base evl evldp; do
  root=$PWD/.probe/$t
  (cd $root && PYTHONPATH=$root:$root/scripts timeout 120 ncu --clock-control none \
     --profile-from-start off --metrics $M --csv \
     python3 $R/docs/probes/ncu_phase2_calls.py 64,65536,1 > $OUT/ncu_$t.csv 2> $OUT/ncu_$t.err)
  echo "== $t"; grep "^\"" $OUT/ncu_$t.csv | python3 -c "
import csv, sys
for r in csv.DictReader(sys.stdin):
    print(f\"  {r['Kernel Name'][:34]:<34} {r['Metric Name']:<28} {r['Metric Value']:>14}\")"
  grep -v "^==PROF" $OUT/ncu_$t.err | tail -2
done
timeout 330 python3 scripts/ab_trees.py .probe/base .probe/evl .probe/evld .probe/evldp \
    --cases B64-64K-n1,B64-128K-n1,B64-16K-n1,B64-64K-n4,B8-64K-n1,B1-64K-n1 --rounds 3 2>&1 | tail -8
