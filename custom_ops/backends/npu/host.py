"""The NPU backend's portable host library (op_host/common) on the CPU, through ctypes.

The AscendC metadata kernel and the indexer kernel run the split, the row-sharing rules and the
top-k merge of op_host/common/*.h. This module compiles the same headers with g++ into
libli_host.so (op_host/common/li_host_api.cpp) so that tests can evaluate the NPU schedule on
the CPU. It needs a source checkout and g++; `load()` raises FileNotFoundError otherwise.
"""
from __future__ import annotations

import ctypes
import functools
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import torch

_SRC = Path(__file__).resolve().parents[3] / "op_host" / "common"
RUN_FIELDS = ("first_b", "first_qb", "first_kb", "last_b", "last_qb", "last_kb", "count",
              "head_shared", "tail_shared", "merges_head", "first_participant", "first_slot",
              "last_slot")


class SplitArgs(ctypes.Structure):
    """Mirror of LiSplitArgs (op_host/common/li_host_api.h)."""

    _fields_ = [(name, ctypes.c_int32) for name in (
        "layoutQuery", "qLenCount", "batch", "defaultS1", "maxSeqlenQ", "sparseCount",
        "sparseMode", "cmpRatio", "numWorkers")]


@functools.lru_cache(maxsize=1)
def load() -> ctypes.CDLL:
    """Compile (once per process) and load libli_host.so."""
    api = _SRC / "li_host_api.cpp"
    cxx = shutil.which(os.environ.get("CXX", "g++"))
    if not api.exists() or cxx is None:
        raise FileNotFoundError(f"need {api} and a C++ compiler (g++) to build the NPU host library")
    out = Path(tempfile.mkdtemp(prefix="li_host_")) / "libli_host.so"
    subprocess.run([cxx, "-std=c++17", "-O2", "-shared", "-fPIC", str(api), "-o", str(out)],
                   check=True, capture_output=True)
    lib = ctypes.CDLL(str(out))
    lib.li_constant.restype = ctypes.c_int64
    lib.li_constant.argtypes = [ctypes.c_char_p]
    lib.li_unit_keys.restype = ctypes.c_int64
    lib.li_visible_keys.restype = ctypes.c_int64
    lib.li_visible_keys.argtypes = [ctypes.c_int64] * 4 + [ctypes.c_int32]
    lib.li_merge_topk.restype = ctypes.c_int64
    return lib


def _ptr(t: torch.Tensor, ctype):
    return ctypes.cast(t.data_ptr(), ctypes.POINTER(ctype))


class NpuSplit:
    """One problem's NPU schedule: the metadata tensor and the per-worker runs."""

    def __init__(self, actual_seq_lengths_query, actual_seq_lengths_key, *, batch, max_seqlen_q,
                 layout_query, default_s1, sparse_count, sparse_mode, cmp_ratio, num_workers):
        self.lib = load()
        q = actual_seq_lengths_query
        self.q = (torch.zeros(1, dtype=torch.int32) if q is None
                  else q.to(torch.int32).contiguous().cpu())
        self.k = actual_seq_lengths_key.to(torch.int32).contiguous().cpu()
        self.args = SplitArgs(1 if layout_query == "TND" else 0, 0 if q is None else q.numel(),
                              batch, default_s1, max_seqlen_q, sparse_count, sparse_mode,
                              cmp_ratio, num_workers)
        self.metadata = torch.zeros(1024, dtype=torch.int32)
        totals = (ctypes.c_int64 * 3)()
        self.lib.li_split(ctypes.byref(self.args), _ptr(self.q, ctypes.c_int32),
                          _ptr(self.k, ctypes.c_int32), _ptr(self.metadata, ctypes.c_int32), totals)
        self.units, self.cost, self.max_unit_cost = list(totals)

    def run(self, w: int) -> dict:
        """Worker w's run (li::WorkerRun plus merge roles), as a dict of RUN_FIELDS."""
        out = (ctypes.c_int64 * len(RUN_FIELDS))()
        self.lib.li_worker_run(ctypes.byref(self.args), _ptr(self.q, ctypes.c_int32),
                               _ptr(self.k, ctypes.c_int32), _ptr(self.metadata, ctypes.c_int32),
                               w, out)
        return dict(zip(RUN_FIELDS, list(out)))

    def walk(self, w: int):
        """(b, qb, kb) of worker w's units, walked with li::Advance as the kernel walks them."""
        run = self.run(w)
        unit = (ctypes.c_int64 * 3)(run["first_b"], run["first_qb"], run["first_kb"])
        for _ in range(run["count"]):
            yield tuple(unit)
            nxt = (ctypes.c_int64 * 3)()
            self.lib.li_advance(ctypes.byref(self.args), _ptr(self.q, ctypes.c_int32),
                                _ptr(self.k, ctypes.c_int32), unit, ctypes.c_int64(1), nxt)
            unit = nxt

    def unit_keys(self, b: int, qb: int, kb: int) -> int:
        return self.lib.li_unit_keys(ctypes.byref(self.args), _ptr(self.q, ctypes.c_int32),
                                     _ptr(self.k, ctypes.c_int32), ctypes.c_int64(b),
                                     ctypes.c_int64(qb), ctypes.c_int64(kb))


def merge_topk(a_idx, a_val, b_idx, b_val, k):
    """li::MergeTopK on int32 / float32 CPU tensors: the kernel's merge, earlier list first."""
    lib = load()
    a_idx, b_idx = a_idx.to(torch.int32).contiguous(), b_idx.to(torch.int32).contiguous()
    a_val, b_val = a_val.to(torch.float32).contiguous(), b_val.to(torch.float32).contiguous()
    out_idx = torch.empty(k, dtype=torch.int32)
    out_val = torch.empty(k, dtype=torch.float32)
    i32, f32 = ctypes.c_int32, ctypes.c_float
    lib.li_merge_topk(_ptr(a_idx, i32), _ptr(a_val, f32), ctypes.c_int64(a_idx.numel()),
                      _ptr(b_idx, i32), _ptr(b_val, f32), ctypes.c_int64(b_idx.numel()),
                      ctypes.c_int64(k), _ptr(out_idx, i32), _ptr(out_val, f32))
    return out_idx, out_val
