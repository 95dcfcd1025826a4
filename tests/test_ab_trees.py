"""scripts/ab_trees.py's case names and report (the timing itself needs a GPU)."""
import importlib.util
import pathlib

import pytest

_spec = importlib.util.spec_from_file_location(
    "ab_trees", pathlib.Path(__file__).parents[1] / "scripts" / "ab_trees.py")
ab_trees = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ab_trees)


@pytest.mark.parametrize("text, expected", [
    ("B64-64K-n1", (64, 65536, 1, "int8", "BSND")),
    ("B1-4K-n4-fp8", (1, 4096, 4, "fp8", "BSND")),
    (" B8-128K-n2-int8 ", (8, 131072, 2, "int8", "BSND")),
    ("T4096-32K", (1, 32768, 4096, "int8", "TND")),
    ("T4096-8K-fp8", (1, 8192, 4096, "fp8", "TND")),
])
def test_case_names(text, expected):
    assert ab_trees.parse_case(text) == expected


@pytest.mark.parametrize("text", ["B64-64K", "B64-64K-n1-bf16", "b64-64K-n1", "B0-4K-n1",
                                  "B1-0K-n1", "B1-4K-n0", "T0-8K", "T4096-8K-n1"])
def test_bad_case_names_say_what_is_expected(text):
    with pytest.raises(ValueError, match="case"):
        ab_trees.parse_case(text)


def test_every_default_case_parses():
    assert all(ab_trees.parse_case(c) for c in ab_trees.DEFAULT_CASES.split(","))


def test_report_gives_each_tree_its_ratio_to_the_first():
    best = {"/a/main": {"B1-4K-n1": 20.0, "B64-64K-n1": 190.0},
            "/a/ties": {"B1-4K-n1": 21.0, "B64-64K-n1": 171.0}}
    lines = ab_trees.report(["/a/main", "/a/ties"], ["B1-4K-n1", "B64-64K-n1"], best)
    assert len(lines) == 3
    assert "/a/main" in lines[0] and "/a/ties" in lines[0]
    assert "20.0 us x 1.000" in lines[1] and "21.0 us x 1.050" in lines[1]
    assert "190.0 us x 1.000" in lines[2] and "171.0 us x 0.900" in lines[2]
    assert len({len(line) for line in lines}) == 1  # aligned
