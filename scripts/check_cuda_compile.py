"""Compile the CUDA backend's Triton kernels (and its Gluon one) for sm_90 without a GPU, exactly
as this checkout's configuration launches them, and print one aligned line per kernel variant:
registers per thread, spill bytes (the stack frame) and shared memory. Compile errors in the
paths only a GPU runs (TMA descriptors, programmatic dependent launch) and register spills show
up before a device is lent; the numbers also give each variant's occupancy.

    pip install --target /tmp/tri triton==3.6.0 "numpy<2.4"
    PYTHONPATH=/tmp/tri python scripts/check_cuda_compile.py [--tma] [--pdl] [--loops] [--sass-hash]
        [--ptxas-notes] [--dump KERNEL] [--threshold-step 2] [--block-n N] [--samples N]

How: the indexer runs on small CPU inputs with every Triton launch replaced by a recorder (the
host code, its checks, chunking and config choices run for real; no kernel runs); each recorded
launch is then compiled with triton.compile for an sm_90 target from the same argument types,
compile-time constants and launch options. Exit status 1 if any variant spills.

`--loops` also prints each variant's largest innermost SASS loops (several: a kernel's largest
is often a rare path's): instructions per iteration, start address and the commonest opcodes;
`--dump KERNEL` the whole SASS of that kernel's variants, to read a loop the counts point at.
`--ptxas-notes` reruns ptxas -v on each variant's PTX and prints its performance notes: C7514
means every wgmma of the kernel runs serialised (session 33's two-tile probe found it so).
Per-element instruction counts found session 8's phase-2 gains (the segment scan at ~60
instructions per score) where latency guesses had not.

Spills live in the stack frame (cuobjdump's STACK; LOCAL stays 0): the frame size is what the
driver reports as local memory per thread and Triton divides by 4 into `n_spills`.
`bench_indexer.py` ends with the registers and spills of the kernels the JIT built on the GPU.
"""
from __future__ import annotations

import argparse
import collections
import dataclasses
import hashlib
import inspect
import os
import re
import subprocess
import sys
import tempfile

import torch
import triton
from triton.backends.compiler import GPUTarget
from triton.experimental.gluon._runtime import GluonASTSource, GluonJITFunction
from triton.runtime.jit import mangle_type

from custom_ops.backends.cuda import configs, indexer as cuda_indexer, indexer_metadata
from custom_ops.backends.cuda import indexer_logits_gluon
from custom_ops.testing import make_indexer_inputs
from cuda_indexer_call import add_topk_options, call, with_topk_options

FP8 = torch.float8_e4m3fn
LAUNCH_OPTIONS = ("num_warps", "num_stages", "launch_pdl", "maxnreg")
# one call per phase-1 path and per top-k ordering, int8 (fp16 scales) and fp8 (fp32 scales)
CASES = [dict(q_lens=[1, 1, 1, 1], k_lens=[5000, 3000, 700, 64]),
         dict(q_lens=[2, 1, 2], k_lens=[5000, 3000, 700]),
         dict(q_lens=[3, 2, 4], k_lens=[5000, 3000, 700]),
         dict(q_lens=[1] * 8, k_lens=[4000] * 8),
         dict(q_lens=[100, 30], k_lens=[3000, 800], layout="TND"),
         # more rows than TopkConfig.bucket_max_rows: the sort order
         dict(q_lens=[300, 30], k_lens=[3000, 800], layout="TND"),
         # more logits than LogitsConfig.gluon_max_keys: fp8 decode on the Triton kernel
         dict(q_lens=[1] * 40, k_lens=[4000] * 40), dict(q_lens=[2] * 20, k_lens=[7000] * 20),
         dict(q_lens=[4] * 10, k_lens=[4000] * 10)]
KERNELS = ("_indexer_logits_kernel", "_indexer_threshold_kernel", "_indexer_segments_kernel",
           "_indexer_merge_kernel", "_indexer_unpack_kernel",
           "_indexer_place_kernel", "_indexer_rank_kernel", "_indexer_place_rank_kernel",
           "_indexer_window_merge_kernel")


class Recorder:
    """Stands in for a JIT kernel: `kernel[grid](*args, **kwargs)` records the launch."""

    def __init__(self, fn, calls):
        self.fn, self.calls = fn, calls

    def __getitem__(self, grid):
        return lambda *args, **kwargs: self.calls.append((self.fn, args, kwargs))


def compile_launch(fn, args, kwargs):
    params = inspect.signature(fn.fn).parameters
    names = list(params)
    constexprs = {k: v for k, v in kwargs.items() if k not in LAUNCH_OPTIONS}
    # defaulted parameters left out are bound to their defaults as the JIT's binder does
    # (left unbound, a later constexpr's value took the slot of the first unbound one)
    constexprs.update({n: p.default for i, (n, p) in enumerate(params.items())
                       if i >= len(args) and n not in constexprs
                       and p.default is not inspect.Parameter.empty})
    signature = {n: "constexpr" if n in constexprs else mangle_type(a)
                 for n, a in zip(names, list(args) + [None] * (len(names) - len(args)))}
    # the JIT's own specialisation: pointers and integers divisible by 16 are marked so, which
    # is what lets Triton vectorise the loads (without it every key byte is its own load)
    attrs = {(i,): [["tt.divisibility", 16]] for i, a in enumerate(args)
             if (isinstance(a, torch.Tensor) and a.data_ptr() % 16 == 0)
             or (isinstance(a, int) and not isinstance(a, bool) and a % 16 == 0)}
    source = GluonASTSource if isinstance(fn, GluonJITFunction) else triton.compiler.ASTSource
    src = source(fn=fn, signature=signature,
                 constexprs={(names.index(k),): v for k, v in constexprs.items()}, attrs=attrs)
    options = {k: kwargs[k] for k in LAUNCH_OPTIONS if k in kwargs}
    return triton.compile(src, target=GPUTarget("cuda", 90, 32), options=options)


def nvidia_tool(name: str) -> str:
    """Path of a CUDA tool (cuobjdump, ptxas) as bundled with Triton's NVIDIA backend."""
    return os.path.join(os.path.dirname(triton.backends.nvidia.__file__), "bin", name)


def cuobjdump(kernel, flag: str) -> str:
    """cuobjdump's output on the kernel's cubin with `flag` (-sass, --dump-resource-usage)."""
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(kernel.asm["cubin"])
        f.flush()
        return subprocess.run([nvidia_tool("cuobjdump"), flag, f.name], capture_output=True,
                              text=True, check=True).stdout


def resources(kernel) -> dict:
    """Registers and stack (spill) bytes from the cubin; shared memory from Triton (dynamic)."""
    out = cuobjdump(kernel, "--dump-resource-usage")
    line = next(l for l in out.splitlines() if "REG:" in l)
    res = dict(item.split(":") for item in line.split() if ":" in item)
    res["SHARED"] = str(kernel.metadata.shared)
    return res


def variant(fn, kwargs) -> str:
    keep = ("MODE", "NQ", "FP8_AS_F16", "CONTIG", "TMA", "KS_PAIRS", "SPLIT", "ROTATE",
            "BLOCK_K", "NUM_STAGES", "PAGE", "NS", "NB", "STEP", "WARPS",
            "BLOCK_N", "BLOCK_C", "BLOCK_I", "BLOCK_J", "PDL", "STEAL", "launch_pdl", "num_warps",
            "maxnreg")
    return " ".join(f"{k}={kwargs[k]}" for k in keep if k in kwargs)


def sass_instructions(kernel) -> list:
    """(address, text) of every instruction of the kernel's SASS."""
    return [(int(m.group(1), 16), m.group(2).strip()) for m in
            re.finditer(r"/\*([0-9a-f]{4,})\*/\s+([^;]*);", cuobjdump(kernel, "-sass"))]


def sass_hash(kernel) -> str:
    """A digest of the SASS: equal digests before and after a refactor mean the GPU runs the
    same code (what the device measured still holds)."""
    return hashlib.md5(repr(sass_instructions(kernel)).encode()).hexdigest()[:12]


def ptxas_notes(kernel) -> list:
    """ptxas's performance notes on the kernel's PTX, such as C7514 (every wgmma serialised:
    an accumulator read while a wgmma may still write it, e.g. a dot carried in flight across
    a loop's back edge). Triton compiles without -v, so they are otherwise never shown."""
    tool = nvidia_tool("ptxas")
    with tempfile.TemporaryDirectory() as d:
        ptx = os.path.join(d, "k.ptx")
        with open(ptx, "w") as f:
            f.write(kernel.asm["ptx"])
        out = subprocess.run([tool, "-arch=sm_90a", "-v", ptx, "-o", os.path.join(d, "k.cubin")],
                             capture_output=True, text=True, check=True)
    return [l.split(": ", 1)[-1] for l in (out.stdout + out.stderr).splitlines()
            if "Performance" in l or "warning" in l.lower()]


def innermost_loops(kernel, top: int = 8) -> list:
    """The largest loops of the SASS whose bodies hold no other loop, each as its length, start
    address and mix. Several, because a kernel's largest loop is often a rare path's (place's is
    the exact fallback's compaction, 804 instructions; its common chunk loop is 135)."""
    ins = sass_instructions(kernel)
    loops = []
    for adr, text in ins:
        m = re.search(r"BRA (0x[0-9a-f]+)", text)
        if m and int(m.group(1), 16) < adr:
            loops.append((int(m.group(1), 16), adr))
    inner = [(a, b) for a, b in loops if not any(a <= c and d <= b and (c, d) != (a, b)
                                                 for c, d in loops)]
    lines = []
    for a, b in sorted(inner, key=lambda ab: ab[0] - ab[1])[:top]:
        ops = collections.Counter(t.split()[1 if t.startswith("@") else 0].split(".")[0]
                                  for adr, t in ins if a <= adr <= b)
        lines.append(f"loop {sum(ops.values())} at {a:#x}: "
                     + " ".join(f"{k} {v}" for k, v in ops.most_common(8)))
    return lines or ["no loop"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tma", action="store_true", help="TMA tiles on every phase-1 path")
    ap.add_argument("--pdl", action="store_true", help="phase 2 as programmatic dependents")
    ap.add_argument("--loops", action="store_true",
                    help="also each variant's largest innermost SASS loops (instructions, mix)")
    ap.add_argument("--sass-hash", action="store_true",
                    help="also a digest of each variant's SASS (compare before/after a refactor)")
    ap.add_argument("--ptxas-notes", action="store_true",
                    help="also ptxas's performance notes per variant (C7514: wgmmas serialised)")
    ap.add_argument("--dump", default="", metavar="KERNEL",
                    help="also print the whole SASS of every variant of KERNEL (address, text)")
    add_topk_options(ap, "threshold_step", "block_n", "samples")
    opts = ap.parse_args()
    tc = dataclasses.replace(configs.TOPK, pdl=opts.pdl or configs.TOPK.pdl)
    configs.TOPK = with_topk_options(tc, opts)
    if opts.tma:
        for key, lc in list(configs.LOGITS.items()):
            configs.LOGITS[key] = dataclasses.replace(lc, tma=True)
    calls = []
    for name in KERNELS:
        setattr(cuda_indexer, name, Recorder(getattr(cuda_indexer, name), calls))
    meta = indexer_metadata._indexer_metadata_kernel
    indexer_metadata._indexer_metadata_kernel = Recorder(meta, calls)
    gluon = indexer_logits_gluon._indexer_logits_gluon_kernel
    indexer_logits_gluon._indexer_logits_gluon_kernel = Recorder(gluon, calls)
    for i, case in enumerate(CASES):
        for qk in (torch.int8, FP8):
            args, kwargs = make_indexer_inputs(**case, qk_dtype=qk, sparse_count=2048,
                                               block_size=64, seed=i)
            call(args, kwargs, workers=132)
    # fp8 one-token calls of as many logits as LogitsConfig.gluon_two_ctas_keys: the Gluon kernel
    # as two CTAs per worker
    lc = configs.LOGITS[("fp8", "single")]
    configs.LOGITS[("fp8", "single")] = dataclasses.replace(lc, gluon_two_ctas_keys=1)
    args, kwargs = make_indexer_inputs(**CASES[0], qk_dtype=FP8, sparse_count=2048, block_size=64,
                                       seed=0)
    call(args, kwargs, workers=132)
    configs.LOGITS[("fp8", "single")] = lc
    # int8 one-token calls of as many logits as LogitsConfig.gluon_steal_keys: the Gluon kernel
    # with work sharing
    lc = configs.LOGITS[("int8", "single")]
    configs.LOGITS[("int8", "single")] = dataclasses.replace(lc, gluon_steal_keys=1)
    args, kwargs = make_indexer_inputs(**CASES[0], sparse_count=2048, block_size=64, seed=0)
    call(args, kwargs, workers=132)
    configs.LOGITS[("int8", "single")] = lc
    # calls of as many rows as TopkConfig.place_rank_rows: place and rank in one launch
    tc = configs.TOPK
    configs.TOPK = dataclasses.replace(tc, place_rank_rows=1)
    args, kwargs = make_indexer_inputs(**CASES[0], sparse_count=2048, block_size=64, seed=0)
    call(args, kwargs, workers=132)
    configs.TOPK = tc
    # a call as captured in a CUDA graph over a wide table: keys in windows, their top-k merged
    configs.GRAPH_LOGITS_BYTES, configs.MIN_WINDOW_KEYS = 0, 1024
    cuda_indexer._in_graph_or_compile = lambda: True
    args, kwargs = make_indexer_inputs(**CASES[0], sparse_count=2048, block_size=64, seed=0)
    call(args, kwargs, workers=132)
    seen, spills = set(), 0
    for fn, args, kwargs in calls:
        key = (fn.__name__, tuple(mangle_type(a) for a in args), tuple(sorted(kwargs.items())))
        if key in seen:
            continue
        seen.add(key)
        kernel = compile_launch(fn, args, kwargs)
        res = resources(kernel)
        spills += int(res["STACK"]) > 0
        warps = kernel.metadata.num_warps  # a Gluon kernel's workers included
        per_sm = min(65536 // (int(res["REG"]) * 32 * warps),
                     233472 // max(int(res["SHARED"]), 1), 64 // warps)
        print(f"{fn.__name__:<28} regs {res['REG']:>3}  stack {res['STACK']:>5}  "
              f"shared {res['SHARED']:>6}  programs/SM {per_sm:>2}  {variant(fn, kwargs)}",
              flush=True)
        if opts.loops:
            for line in innermost_loops(kernel):
                print(f"    {line}", flush=True)
        if opts.sass_hash:
            print(f"    sass {sass_hash(kernel)}", flush=True)
        if opts.ptxas_notes:
            for line in ptxas_notes(kernel):
                print(f"    ptxas: {line}", flush=True)
        if opts.dump and fn.__name__ == opts.dump:
            for adr, text in sass_instructions(kernel):
                print(f"    {adr:#07x}  {text}")
    print(f"{len(seen)} variants compiled for sm_90, {spills} spilling")
    sys.exit(1 if spills else 0)


if __name__ == "__main__":
    main()
