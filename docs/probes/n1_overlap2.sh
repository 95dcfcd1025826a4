#!/usr/bin/env bash
# Session 35: what the int8 next_n=1 logits pass loses when its consumers work (B64 64K,
# logits kernel alone). Session 35's first call: loads alone 126-128 µs (dry), consumers alone
# 97 µs at two CTAs per worker, yet both 140: the consumers' own speed is not the loss. This
# call splits the consumer's work: nodot (consumer_nodot.patch: no dot and, folded by the
# compiler, no epilogue; the scores still stored), nostore (consumer_nostore.patch: dots and
# epilogue, every store masked off at run time). Then ncu, clocks left free, of base / dry /
# nostore: SM clock while the kernel runs, DRAM bytes, L2 hit rate.
# Predicted: if the stores cost the 15 µs (read/write turnaround), nodot ~140 and nostore
# ~128; if the dots do (shared-memory port or power), nodot ~128 and nostore ~140, and ncu
# shows a lower SM clock for base than for dry when power is the cause.
# Trees: rm -rf .probe; for t in base dry nodot nostore; do mkdir -p .probe/$t;
#   git archive HEAD | tar -x -C .probe/$t; done
#   (cd .probe/dry && patch -p1 < ../../docs/probes/dry_consumer.patch)
#   (cd .probe/nodot && patch -p1 < ../../docs/probes/consumer_nodot.patch)
#   (cd .probe/nostore && patch -p1 < ../../docs/probes/consumer_nostore.patch)
# Run with `carry: [".probe"]`; ~5 min.
export PYTHONUNBUFFERED=1
export PYTHONPATH=$PWD:$PWD/scripts
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.limit --format=csv
timeout 200 python3 docs/probes/dry_consumer_probe.py .probe/base .probe/dry .probe/nodot \
    .probe/nostore 2>&1 | tail -13
M=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,dram__cycles_elapsed.avg.per_second,dram__bytes_read.sum,dram__bytes_write.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_sector_hit_rate.pct,smsp__inst_executed.sum
R=$PWD
for t in base dry nostore nodot; do
  root=$PWD/.probe/$t
  (cd $root && PYTHONPATH=$root:$root/scripts timeout 120 ncu --clock-control none \
     --profile-from-start off -k regex:logits --metrics $M --csv \
     python3 $R/docs/probes/ncu_phase2_calls.py 64,65536,1 > $OUT/ncu_$t.csv 2> $OUT/ncu_$t.err)
  echo "== $t"; grep "^\"" $OUT/ncu_$t.csv | python3 -c "
import csv, sys
for r in csv.DictReader(sys.stdin):
    print(f\"  {r['Metric Name']:<52} {r['Metric Unit']:>10} {r['Metric Value']:>16}\")"
  tail -2 $OUT/ncu_$t.err
done
