"""scripts/compare_loops.py: which compiled variants' registers, stack or loops changed."""
import importlib.util
import pathlib

_spec = importlib.util.spec_from_file_location(
    "compare_loops", pathlib.Path(__file__).parents[1] / "scripts" / "compare_loops.py")
compare_loops = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(compare_loops)

OLD = """\
_indexer_metadata_kernel     regs 255  stack    56  shared   2048  programs/SM  1  num_warps=8
    no loop
_indexer_logits_gluon_kernel regs 168  stack     0  shared 100056  programs/SM  1  NQ=1 num_warps=4
    loop 173 at 0x1440: I2FP 32 FMNMX 32 FFMA 32
    loop 47 at 0x2d00: UIADD3 11
_indexer_logits_gluon_kernel regs  80  stack     8  shared 100696  programs/SM  2  NQ=1 num_warps=4
    loop 188 at 0x1dc0: F2FP 32 FMNMX 32 FFMA 32
"""
NEW = OLD.replace("loop 188 at", "loop 167 at").replace("stack     8", "stack     0")


def test_reports_only_what_changed(tmp_path):
    (tmp_path / "old").write_text(OLD)
    (tmp_path / "new").write_text(NEW)
    old = compare_loops.read(str(tmp_path / "old"))
    new = compare_loops.read(str(tmp_path / "new"))
    assert [len(v[2]) for v in old] == [0, 2, 1]
    lines = compare_loops.changes(old, new, 4)
    assert len(lines) == 2
    assert lines[0] == "_indexer_logits_gluon_kernel NQ=1 num_warps=4 shared 100696"
    assert "regs 80 stack 8" in lines[1] and "[188]" in lines[1] and "[167]" in lines[1]
    assert compare_loops.changes(old, old, 4) == []


def test_different_variant_lists_are_said(tmp_path):
    (tmp_path / "old").write_text(OLD)
    (tmp_path / "new").write_text(OLD.replace("NQ=1 num_warps=4\n    loop 173",
                                              "NQ=2 num_warps=4\n    loop 173"))
    lines = compare_loops.changes(compare_loops.read(str(tmp_path / "old")),
                                  compare_loops.read(str(tmp_path / "new")), 4)
    assert "different variant lists" in lines[0]
