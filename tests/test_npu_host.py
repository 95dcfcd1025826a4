"""The NPU backend's portable C++ (op_host/common) against the package's Python definitions.

The C++ is compiled with g++ at test time (custom_ops.backends.npu.host); its own rule-by-rule
tests are the ctest cases of tests/host.
"""
import pytest
import torch

from custom_ops import metadata
from custom_ops.backends.npu import host
from schedule_oracle import walk

try:
    host.load()
except (FileNotFoundError, OSError) as exc:  # no g++ or no source checkout
    pytest.skip(f"NPU host library unavailable: {exc}", allow_module_level=True)

SHARED_CONSTANTS = [
    "METADATA_LEN", "FORMAT_ID", "BACKEND_CPU", "BACKEND_CUDA", "BACKEND_NPU", "HEADER_LEN",
    "RECORD_LEN", "MAX_WORKERS", "F_FORMAT", "F_BACKEND", "F_WORKERS", "F_QBLOCK", "F_KBLOCK",
    "F_BATCH", "F_UNITS", "F_QBLOCKS", "F_SPARSE_COUNT", "F_SPARSE_MODE", "F_CMP_RATIO",
    "F_LAYOUT",
]


@pytest.mark.parametrize("name", SHARED_CONSTANTS)
def test_cpp_metadata_constant_equals_python(name):
    assert host.load().li_constant(name.encode()) == getattr(metadata, name)


@pytest.mark.parametrize("layout", ["BSND", "TND"])
def test_cpp_layout_codes_equal_python(layout):
    assert host.load().li_constant(f"LAYOUT_{layout}".encode()) == metadata.LAYOUT_CODES[layout]


def _problem(s1, s2, layout, cmp_ratio, sparse_mode):
    b = len(s2)
    ask = torch.tensor(s2, dtype=torch.int32)
    if layout == "TND":
        asq = torch.tensor(s1, dtype=torch.int32).cumsum(0).to(torch.int32)
    else:
        asq = torch.tensor(s1, dtype=torch.int32)
    return dict(actual_seq_lengths_query=asq, actual_seq_lengths_key=ask, batch=b,
                max_seqlen_q=max(s1), layout_query=layout, sparse_count=2048,
                sparse_mode=sparse_mode, cmp_ratio=cmp_ratio)


CASES = {
    "B4-decode-S1-1": ([1, 1, 1, 1], [131072, 100, 0, 9000], "BSND", 1, 3),
    "B2-mtp-S1-4-cmp4": ([4, 3], [70000, 5000], "BSND", 4, 3),
    "B3-tnd-prefill": ([9, 0, 37], [9, 100, 50000], "TND", 1, 3),
    "B2-mode0-cmp128": ([5, 5], [300000, 128], "BSND", 128, 0),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_npu_split_enumerates_the_same_units_as_metadata_compute(case):
    p = _problem(*case)
    npu = host.NpuSplit(p["actual_seq_lengths_query"], p["actual_seq_lengths_key"],
                        default_s1=p["max_seqlen_q"], num_workers=24,
                        **{k: p[k] for k in ("batch", "max_seqlen_q", "layout_query",
                                             "sparse_count", "sparse_mode", "cmp_ratio")})
    ref = metadata.compute(
        metadata.SplitParams(metadata.BACKEND_NPU, 24, 4, 2048), p["actual_seq_lengths_query"],
        p["actual_seq_lengths_key"], batch=p["batch"], max_seqlen_q=p["max_seqlen_q"],
        layout_query=p["layout_query"], sparse_count=2048, sparse_mode=p["sparse_mode"],
        cmp_ratio=p["cmp_ratio"], device="cpu")
    got, want = metadata.decode(npu.metadata), metadata.decode(ref)
    # Same format, same unit enumeration; only the cost-model balance of the runs differs.
    assert got.backend == metadata.BACKEND_NPU
    assert got.total_units == want.total_units
    assert (got.q_block, got.k_block, got.q_blocks) == (want.q_block, want.k_block, want.q_blocks)
    assert sum(r[3] for r in got.workers) == got.total_units
    assert npu.metadata[:metadata.HEADER_LEN].tolist() == ref[:metadata.HEADER_LEN].tolist()
    # the workers' runs, walked as the kernel walks them, are the enumeration in order
    q_lens, k_lens, layout, cmp_ratio, sparse_mode = case
    order, runs = walk(got, q_lens, k_lens, layout, sparse_mode, cmp_ratio, max(q_lens))
    assert [u for run in runs for u in run] == order


@pytest.mark.parametrize("s2", [0, 1, 2047, 2048, 2049, 131072])
@pytest.mark.parametrize("cmp_ratio", [1, 4, 128])
def test_cpp_visible_keys_equal_python(s2, cmp_ratio):
    lib = host.load()
    s1 = 4
    for mode in (0, 3):
        want = metadata.visible_keys(torch.arange(s1), s1, torch.tensor(s2), cmp_ratio, mode)
        got = [lib.li_visible_keys(s, s1, s2, cmp_ratio, mode) for s in range(s1)]
        assert got == want.tolist(), f"mode {mode}"
