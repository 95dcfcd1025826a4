"""The README's Python examples run as written (on the CPU here)."""
import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_examples_run():
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    assert len(blocks) >= 3, "the README lost its examples"
    scope = {}
    for block in blocks:
        exec(compile(block, str(README), "exec"), scope)  # noqa: S102 - our own documentation
    assert scope["sparse_indices"].shape[-1] == 2048
    assert scope["cache"].shape[1] == 5
