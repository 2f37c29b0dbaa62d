"""Short module docstrings: what a module of the product is for and why, in a few lines; the design discussion
lives in docs/design.md."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.support.paths import REPO_ROOT
from tests.support.source_code import modules, write_tree

MOST_LINES = 15


def long_docstrings(root: Path = REPO_ROOT) -> list[str]:
    lengths = {module.relative: len((ast.get_docstring(module.tree) or "").splitlines()) for module in modules(root)}
    return [f"{path}: a docstring of {lines} lines, over {MOST_LINES}" for path, lines in sorted(lengths.items())
            if lines > MOST_LINES]


def test_no_module_docstring_is_over_15_lines() -> None:
    found = long_docstrings()
    assert not found, "\n".join(found)


def test_a_module_docstring_over_15_lines_is_seen(tmp_path: Path) -> None:
    def docstring(lines: int) -> str:
        return '"""' + "\n".join(f"line {n}" for n in range(lines)) + '"""\n'

    write_tree(tmp_path, {"pipeline/engine/wordy.py": docstring(16), "pmw_sandbox/app.py": docstring(15)})
    assert long_docstrings(tmp_path) == ["pipeline/engine/wordy.py: a docstring of 16 lines, over 15"]
