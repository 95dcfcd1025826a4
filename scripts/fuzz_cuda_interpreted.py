"""Random indexer calls through the CUDA backend's host code and Triton kernels on CPU tensors
(the Triton interpreter), against the golden: the GPU fuzz's draws (scripts/fuzz_indexer.py),
smaller, each run with a random choice of the paths a GPU call may take, so the host logic
(chunks, token windows, key windows, schedules, phase-2 orders, the exact fallback, the
caller's metadata and its gate) gets checked without a GPU.

    pip install --target /tmp/tri triton==3.6.0 "numpy<2.4"
    PYTHONPATH=/tmp/tri:$PWD:$PWD/scripts python scripts/fuzz_cuda_interpreted.py \
        [--seconds 600] [--seed 0] [--scores 20000]

Per call, each drawn independently: the workers (SMs) 1..8; the caller's metadata (made by the
CUDA metadata kernel) or none; a workspace of a few rows (chunks, or token windows when a
sequence's rows exceed one chunk); the call treated as captured in a CUDA graph with keys in
windows of 512 or 1024; the sort order instead of buckets; a 1-bit threshold (most rows take the
exact fallback). Outputs are poisoned before the kernels run. One line per call; exit status 1
if any differed. (Gluon does not run in the interpreter: the Triton kernel stands in for it.)
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import random
import time

os.environ["TRITON_INTERPRET"] = "1"


import fuzz_indexer as fuzz  # noqa: E402
from custom_ops import _checks  # noqa: E402
from custom_ops.backends.cuda import configs, indexer as cuda_indexer  # noqa: E402
from custom_ops.backends.cuda.indexer_metadata import indexer_metadata  # noqa: E402
from custom_ops.testing import IndexerMismatch, assert_indexer_close  # noqa: E402


def draw_paths(rng: random.Random) -> dict:
    return dict(workers=rng.randint(1, 8), metadata=rng.random() < 0.5,
                workspace_rows=rng.choice([None, None, 1, 2, 3, 5]),
                key_window=rng.choice([None, None, None, 512, 1024]),
                sort=rng.random() < 0.2, exact=rng.random() < 0.1)


def _poisoned_outputs(rows, p, device):
    idx, val = _new_outputs(rows, p, device)
    idx.fill_(0x7F7F7F7F)
    val.fill_(float("nan"))
    return idx, val


_new_outputs = cuda_indexer._new_outputs


def run(case: dict, paths: dict):
    """The CUDA backend on the case's CPU tensors, with the drawn paths; restores the knobs."""
    # (the CPU backend's metadata would not be the CUDA backend's: made below if drawn)
    args, kwargs = fuzz.inputs({**case, "with_metadata": False}, "cpu")
    full = _checks.indexer_arguments(kwargs)
    p = _checks.check_indexer(*args, **full)
    asq, ask = full["actual_seq_lengths_query"], full["actual_seq_lengths_key"]
    saved = (cuda_indexer.WORKSPACE_BYTES, configs.GRAPH_LOGITS_BYTES, configs.MIN_WINDOW_KEYS,
             cuda_indexer._in_graph_or_compile, configs.TOPK)
    try:
        cap = p.max_blocks_per_seq * p.block_size
        if paths["workspace_rows"] is not None:
            cuda_indexer.WORKSPACE_BYTES = configs.scratch_bytes(
                paths["workspace_rows"], cap, p.sparse_count)
        if paths["key_window"] is not None:
            configs.GRAPH_LOGITS_BYTES, configs.MIN_WINDOW_KEYS = 0, paths["key_window"]
            cuda_indexer._in_graph_or_compile = lambda: True
        if paths["sort"]:
            configs.TOPK = dataclasses.replace(configs.TOPK, bucket_max_rows=0)
        if paths["exact"]:
            configs.TOPK = dataclasses.replace(configs.TOPK, threshold_bits=1)
        metadata = None
        if paths["metadata"]:
            s1 = p.max_s1 if p.layout_query == "BSND" else max(case["q_lens"] + [1])
            metadata = indexer_metadata(
                asq, ask, max_seqlen_q=s1,
                **cuda_indexer._schedule_args(p, paths["workers"]))
        out = cuda_indexer.indexer(*args, asq, ask, full["block_table"], metadata, p=p,
                                   workers=paths["workers"])
    finally:
        (cuda_indexer.WORKSPACE_BYTES, configs.GRAPH_LOGITS_BYTES, configs.MIN_WINDOW_KEYS,
         cuda_indexer._in_graph_or_compile, configs.TOPK) = saved
    return out, args, kwargs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=600)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--scores", type=float, default=20000,
                    help="query tokens x keys per call at most (the interpreter is slow)")
    opts = ap.parse_args()
    fuzz.SCORES_MAX = opts.scores * 200  # draw() takes 1/200 of it for device "cpu"
    cuda_indexer._new_outputs = _poisoned_outputs
    rng = random.Random(opts.seed)
    end = time.monotonic() + opts.seconds
    failed, n = [], 0
    while time.monotonic() < end:
        case, paths = fuzz.draw(rng, "cpu"), draw_paths(rng)
        case["with_metadata"] = paths["metadata"]  # (the tag's "meta": this run's own draw)
        t0 = time.monotonic()
        try:
            (idx, val), args, kwargs = run(case, paths)
            assert_indexer_close(idx, val, args, kwargs, exact=case["ties"],
                                 rtol=0 if case["ties"] else 1e-5)
            verdict = "ok"
        except IndexerMismatch as e:
            verdict = f"DIFFERS: {e}"
            failed.append((case, paths, str(e)))
        except Exception as e:  # noqa: BLE001 - a kernel or host error is a finding too
            verdict = f"RAISED {type(e).__name__}: {e}"
            failed.append((case, paths, verdict))
        shown = " ".join(f"{k}={v}" for k, v in paths.items()
                         if k != "metadata" and v not in (None, False))
        print(f"{n:4d} {fuzz.tag(case)} | {shown}  {verdict}  ({time.monotonic() - t0:.1f} s)",
              flush=True)
        n += 1
    print(f"{n} calls, {len(failed)} differed")
    for case, paths, what in failed:
        print(f"  {case}\n  {paths}\n    {what}")
    raise SystemExit(1 if failed else 0)


if __name__ == "__main__":
    main()
