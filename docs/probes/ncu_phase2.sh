# Phase 2's kernels under ncu (one eager call per case, B64/B1/B64 n4/B8 at 64K, int8): time,
# warp instructions, issue-active %, occupancy, DRAM and L2 bytes. Session 20, device call 1.
set -x
export PYTHONPATH=$PWD:$PWD/scripts
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv
M=gpu__time_duration.sum,smsp__inst_executed.sum,sm__cycles_elapsed.avg,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__warps_active.avg.pct_of_peak_sustained_active,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum,launch__grid_size,launch__registers_per_thread
timeout 500 ncu --profile-from-start off --metrics $M --csv python3 docs/probes/ncu_phase2_calls.py > $OUT/ncu.csv 2> $OUT/ncu.err
tail -5 $OUT/ncu.err
python3 - <<'PY'
import csv, os, collections
rows = list(csv.reader(open(os.environ["OUT"] + "/ncu.csv")))
hdr = None
data = collections.OrderedDict()
for r in rows:
    if r and r[0] == "ID":
        hdr = r; continue
    if hdr is None or len(r) != len(hdr): continue
    d = dict(zip(hdr, r))
    key = (d["ID"], d["Kernel Name"][:40])
    data.setdefault(key, {})[d["Metric Name"]] = d["Metric Value"]
for (i, k), m in data.items():
    short = {n.split("__")[1][:38] if "__" in n else n: v for n, v in m.items()}
    print(i, k, " | ".join(f"{n}={v}" for n, v in m.items()))
PY
