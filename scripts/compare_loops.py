"""Two `check_cuda_compile.py --loops` outputs side by side: each compiled variant whose
registers, stack or largest SASS loops changed, with its loop sizes before and after (the
instructions a tile issues are what an issue-bound logits loop costs; NOTES, session 29).

    python scripts/check_cuda_compile.py --tma --loops > old.txt   # on one tree
    python scripts/check_cuda_compile.py --tma --loops > new.txt   # on the other
    python scripts/compare_loops.py old.txt new.txt [--loops 4]
"""
from __future__ import annotations

import argparse
import re

_LOOP = re.compile(r"\s+loop (\d+) at ")
_FIELDS = re.compile(r"^(\S+)\s+regs\s+(\d+)\s+stack\s+(\d+)\s+shared\s+(\d+)\s+"
                     r"programs/SM\s+\d+\s*(.*)$")


def read(path: str) -> list[tuple[str, str, list[int]]]:
    """(variant, 'regs R stack S', its loops' sizes in the listed order) per compiled variant,
    in the file's order (a variant: its kernel name, constexprs and shared memory, which tells
    int8 and fp8 variants of the same constexprs apart)."""
    out = []
    with open(path) as f:
        for line in f:
            m = _FIELDS.match(line.rstrip())
            if m:
                out.append((f"{m[1]} {m[5]} shared {m[4]}", f"regs {m[2]} stack {m[3]}", []))
                continue
            m = _LOOP.match(line)
            if m and out:
                out[-1][2].append(int(m[1]))
    return out


def changes(old, new, loops: int) -> list[str]:
    """A line pair per variant that changed (matched by position: both files list the same
    launches in the same order); where the lists differ, a line at the first variant that
    differs and the two counts."""
    lines = []
    for (name, res0, l0), (name1, res1, l1) in zip(old, new):
        if name != name1:
            lines.append(f"{name}  !=  {name1}  (different variant lists)")
            break
        if res0 != res1 or l0[:loops] != l1[:loops]:
            lines.append(name)
            lines.append(f"    {res0:<22} loops {l0[:loops]}  ->  {res1:<22} loops {l1[:loops]}")
    if len(old) != len(new):
        lines.append(f"{len(old)} variants before, {len(new)} after")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--loops", type=int, default=4, help="largest loops compared per variant")
    opts = ap.parse_args()
    old, new = read(opts.old), read(opts.new)
    lines = changes(old, new, opts.loops)
    print("\n".join(lines) if lines else f"{len(old)} variants, none changed")


if __name__ == "__main__":
    main()
