"""Small rooms: no module of the product (pipeline/ and the emulator, pmw_sandbox/) is over 500 lines."""

from __future__ import annotations

from pathlib import Path

from tests.support.paths import REPO_ROOT
from tests.support.source_code import modules, write_tree

MOST_LINES = 500


def oversized_modules(root: Path = REPO_ROOT) -> list[str]:
    sizes = {module.relative: len(module.text.splitlines()) for module in modules(root)}
    return [f"{path}: {lines} lines, over {MOST_LINES}" for path, lines in sorted(sizes.items())
            if lines > MOST_LINES]


def test_no_module_is_over_500_lines() -> None:
    found = oversized_modules()
    assert not found, "\n".join(found)


def test_a_module_over_500_lines_is_seen(tmp_path: Path) -> None:
    write_tree(tmp_path, {"pipeline/engine/big.py": "x = 1\n" * 501, "pmw_sandbox/app.py": "x = 1\n" * 500})
    assert oversized_modules(tmp_path) == ["pipeline/engine/big.py: 501 lines, over 500"]
