"""Two runs of `bench_indexer.py` side by side: every case present in both CSVs, sorted by the
relative change of its median µs, one aligned line each, the largest changes first and last.
Cases that moved by more than `--flag` percent are marked: a case far off its neighbours and
its earlier runs is a lead (session 13's committed run had two such outliers that were rows
taking the exact top-k fallback; NOTES, session 14).

    python scripts/compare_bench.py docs/bench/indexer_h200.csv NEW/bench_indexer.csv [--flag 10]
"""
from __future__ import annotations

import argparse
import csv


def read(path: str) -> dict[str, float]:
    with open(path, newline="") as f:
        return {row["tag"]: float(row["us"]) for row in csv.DictReader(f) if row.get("us")}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--flag", type=float, default=10.0, help="mark changes beyond this percent")
    ap.add_argument("--lines", type=int, default=10, help="lines from each end (0: all)")
    opts = ap.parse_args()
    old, new = read(opts.old), read(opts.new)
    rows = sorted(((new[t] - old[t]) / old[t] * 100, t) for t in old.keys() & new.keys())
    if opts.lines and len(rows) > 2 * opts.lines:
        rows = rows[:opts.lines] + [None] + rows[-opts.lines:]
    for row in rows:
        if row is None:
            print("...")
            continue
        change, tag = row
        mark = "  <-" if abs(change) > opts.flag else ""
        print(f"{tag:<40} {old[tag]:9.1f} -> {new[tag]:9.1f} us  {change:+6.1f} %{mark}")
    print(f"{len(old.keys() & new.keys())} cases in both; only in the old run: "
          f"{len(old.keys() - new.keys())}, only in the new: {len(new.keys() - old.keys())}")


if __name__ == "__main__":
    main()
