"""Random indexer calls on the GPU against the golden (SPEC §1.5), at sizes the test suite does not
reach: up to 64 sequences, 128K keys, 16 query tokens per sequence (or a few hundred in prefill),
k up to 2048, every block size, cmp_ratio, layout, mask and dtype, called eagerly or replayed
from a CUDA graph, with the caller's metadata or without.

    PYTHONPATH=$PWD python3 scripts/fuzz_indexer.py [--seconds 240] [--seed 0] [--device cuda]

(`--device cpu` runs the same draws eagerly on the CPU backend, smaller: a check of this script.)

One line per call: its number, how it was called, the problem, and `ok` or what differed. Outputs
are poisoned before every call (eager: the memory the outputs will take; graph: the graph's
output buffers before the replay), so an unwritten entry fails. The golden's float64 arithmetic
runs on the GPU. Exit status 1 if any call differed, with the failing problems repeated at the end.
"""
from __future__ import annotations

import argparse
import random
import time

import torch

from custom_ops.testing import IndexerMismatch, assert_indexer_close, make_indexer_inputs

OP = torch.ops.custom.npu_vllm_quant_lightning_indexer
META = torch.ops.custom.npu_vllm_quant_lightning_indexer_metadata
DTYPES = {"int8": (torch.int8, torch.float16), "int8f32": (torch.int8, torch.float32),
          "fp8": (torch.float8_e4m3fn, torch.float32), "fp8f16": (torch.float8_e4m3fn, torch.float16)}
# query tokens x keys per call at most: the golden's float64 [tokens, 64, keys] temporaries fit
SCORES_MAX = 1.5e7


def draw(rng: random.Random, device: str) -> dict:
    """One random problem (make_indexer_inputs' arguments plus how to call it)."""
    layout = rng.choice(["BSND", "BSND", "TND", "TND+1"])
    batch = rng.choice([rng.randint(1, 4), rng.randint(5, 16), rng.randint(17, 64)])
    kind = rng.random()
    if kind < 0.6:
        q_lens = [rng.randint(1, 4) for _ in range(batch)]
    elif kind < 0.9:
        q_lens = [rng.randint(0, 16) for _ in range(batch)]
    else:  # prefill
        batch = min(batch, 2)
        q_lens = [rng.randint(1, 300) for _ in range(batch)]
    cmp = 1 if rng.random() < 0.6 else rng.choice([2, 4, 8, 16, 32, 64, 128])
    k_lens = [int(2 ** rng.uniform(0, 17)) * cmp if rng.random() > 0.05 else 0
              for _ in range(batch)]
    budget = SCORES_MAX if device == "cuda" else SCORES_MAX / 200
    scale = (sum(q * k // cmp for q, k in zip(q_lens, k_lens)) or 1) / budget
    if scale > 1:  # too large for a quick golden: shorter contexts
        k_lens = [int(k / scale) for k in k_lens]
    case = dict(q_lens=q_lens, k_lens=k_lens, layout=layout.split("+")[0],
                leading_zero=layout.endswith("+1"), cmp_ratio=cmp,
                block_size=rng.choice([16, 32, 64, 64, 64, 128, 256, 512, 1024]),
                sparse_mode=rng.choice([0, 3, 3]),
                sparse_count=rng.choice([2048, 2048, 512, 64, rng.randint(1, 2048)]),
                return_value=rng.random() < 0.5, strided_key=rng.random() < 0.8,
                ties=rng.random() < 0.1, dtype=rng.choice(list(DTYPES)),
                seed=rng.randint(0, 2 ** 31))
    if case["layout"] == "BSND":
        case["s1"] = max(q_lens) + rng.choice([0, 0, 0, 1, 3])
        case["pass_q_lens"] = rng.random() < 0.9
    else:
        case["t_pad"] = rng.choice([0, 0, 2, 17])
    # weights in the other accepted dtype than the scales (SPEC §1.1 ties only the two scales)
    case["weights_dtype"] = rng.choice([None, None, "float32", "float16"])
    case["mode"] = rng.choice(["eager", "eager", "graph"]) if device == "cuda" else "eager"
    case["with_metadata"] = rng.random() < 0.5
    return case


def tag(case: dict) -> str:
    q, k = case["q_lens"], case["k_lens"]
    lay = case["layout"] + ("+1" if case.get("leading_zero") else "")
    return (f"{case['mode']:<5} {lay:<6} B{len(q):<3} q{max(q):<4} ctx{max(k):<7} "
            f"cmp{case['cmp_ratio']:<4} bs{case['block_size']:<5} m{case['sparse_mode']} "
            f"k{case['sparse_count']:<5} {case['dtype']:<7}"
            f"{' ties' if case['ties'] else ''}{' meta' if case['with_metadata'] else ''}"
            f"{'' if case['strided_key'] else ' contig'}{' values' if case['return_value'] else ''}"
            f"{'' if case['weights_dtype'] is None else ' weights ' + case['weights_dtype']}")


def inputs(case: dict, device: str):
    qk, sc = DTYPES[case["dtype"]]
    make = {n: v for n, v in case.items()
            if n not in ("dtype", "mode", "with_metadata", "weights_dtype")}
    args, kwargs = make_indexer_inputs(qk_dtype=qk, scale_dtype=sc, device=device, **make)
    if case["weights_dtype"] is not None:
        args = (*args[:2], args[2].to(getattr(torch, case["weights_dtype"])), *args[3:])
    if case["with_metadata"]:
        asq = kwargs["actual_seq_lengths_query"]
        if case["layout"] == "BSND":
            max_q = args[0].shape[1]
        else:
            max_q = max(case["q_lens"] + [1])
        kwargs["metadata"] = META(
            actual_seq_lengths_query=asq, actual_seq_lengths_key=kwargs["actual_seq_lengths_key"],
            num_heads_q=64, num_heads_k=1, head_dim=128, batch_size=len(case["k_lens"]),
            max_seqlen_q=max_q, layout_query=case["layout"], sparse_count=case["sparse_count"],
            sparse_mode=case["sparse_mode"], cmp_ratio=case["cmp_ratio"], device=device)
    return args, kwargs


def call(case: dict, args, kwargs, device: str):
    if device != "cuda":
        return OP(*args, **kwargs)
    if case["mode"] == "eager":
        # the caching allocator hands the outputs memory that this fill has just released
        torch.empty(1 << 26, dtype=torch.int32, device="cuda").fill_(0x7F7F7F7F)
        return OP(*args, **kwargs)
    OP(*args, **kwargs)  # eager first: builds and loads what the capture launches
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        idx, val = OP(*args, **kwargs)
    idx.fill_(0x7F7F7F7F)
    val.fill_(float("nan"))
    graph.replay()
    torch.cuda.synchronize()
    return idx, val


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=240)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--device", default="cuda")
    opts = ap.parse_args()
    rng = random.Random(opts.seed)
    end = time.monotonic() + opts.seconds
    failed = []
    n = 0
    while time.monotonic() < end:
        case = draw(rng, opts.device)
        args, kwargs = inputs(case, opts.device)
        t0 = time.monotonic()
        try:
            idx, val = call(case, args, kwargs, opts.device)
            assert_indexer_close(idx, val, args, kwargs, exact=case["ties"],
                                 rtol=0 if case["ties"] else 1e-5, golden_device=opts.device)
            verdict = "ok"
        except IndexerMismatch as e:
            verdict = f"DIFFERS: {e}"
            failed.append((case, str(e)))
        print(f"{n:4d} {tag(case)}  {verdict}  ({time.monotonic() - t0:.1f} s)", flush=True)
        n += 1
        del args, kwargs
        if opts.device == "cuda":
            torch.cuda.empty_cache()
    print(f"{n} calls, {len(failed)} differed")
    for case, what in failed:
        print(f"  {case}\n    {what}")
    raise SystemExit(1 if failed else 0)


if __name__ == "__main__":
    main()
