"""scripts/bench_indexer.py's rule for how many calls a timed CUDA graph holds (the timing
itself needs a GPU)."""
import importlib.util
import pathlib

import pytest

_spec = importlib.util.spec_from_file_location(
    "bench_indexer", pathlib.Path(__file__).parents[1] / "scripts" / "bench_indexer.py")
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)


@pytest.mark.parametrize("pass_us, sets, expected", [
    (185.0, 1, 11),     # B64 64K: one set, repeated until the replay holds 2 ms of calls
    (400.0, 2, 10),     # two sets, five passes
    (2100.0, 91, 91),   # a pass already past 2 ms: once
    (1000.0, 70, 70),   # more sets than GRAPH_MAX_CALLS: each once all the same
    (10.0, 1, 64),      # tiny calls: at most GRAPH_MAX_CALLS
    (0.0, 3, 3),        # a replay the events could not see: once
])
def test_graph_calls(pass_us, sets, expected):
    assert bench.graph_calls(pass_us, sets, 2000.0) == expected


def test_every_set_is_timed_at_least_once():
    for sets in range(1, 200, 7):
        for pass_us in (1.0, 50.0, 999.0, 5000.0):
            assert bench.graph_calls(pass_us, sets) >= sets


def test_native_sets_drop_only_the_metadata():
    sets = [(("q",), {"metadata": 1, "sparse_count": 8}), (("q2",), {"sparse_count": 4})]
    assert bench.without_metadata(sets) == [(("q",), {"sparse_count": 8}),
                                            (("q2",), {"sparse_count": 4})]


@pytest.mark.parametrize("start, end", [(4.06e12, 4.19e12), (4.19e12, 4.06e12)])
def test_bar_cases_rechecked_at_the_higher_bandwidth(monkeypatch, capsys, start, end):
    monkeypatch.setattr(bench, "copy_bandwidth", lambda: end)
    rows = [dict(tag="metadata-B64", batch=64, ctx=65536, next_n=1, us=7.4),  # no bytes
            dict(tag="decode-B64-ctx64K-n1-int8", batch=64, ctx=65536, next_n=1, us=174.8,
                 gbs=3125.0),
            dict(tag="decode-B64-ctx64K-n4-int8", batch=64, ctx=65536, next_n=4, us=393.4,
                 gbs=1397.0)]
    bench.recheck_bandwidth(start, rows)
    out = capsys.readouterr().out
    assert "bar cases at 4.190 TB/s" in out
    assert "74.6% bw" in out  # 3125 GB/s of 4.19 TB/s, not of 4.06 (77.0 %)
    assert "n4" not in out and "metadata" not in out
