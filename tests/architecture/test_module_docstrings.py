"""Short module docstrings: what a module of the product is for and why, in a few lines; the design discussion
lives in docs/design.md."""

from __future__ import annotations

import ast
import re
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


DESIGN = REPO_ROOT / "docs" / "design.md"
SECTION_NAMED = re.compile(r'docs/design\.md,\s+"([^"]+)"')


def design_sections() -> dict[str, str]:
    """Each section of docs/design.md by its heading, with its text."""
    parts = re.split(r"^## (.+)$", DESIGN.read_text(), flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def test_a_docstring_sends_the_reader_to_a_section_of_the_design_notes_that_exists() -> None:
    sections = design_sections()
    missing = [f"{module.relative}: no section {title!r}" for module in modules()
               for title in SECTION_NAMED.findall(ast.get_docstring(module.tree) or "") if title not in sections]
    assert not missing, "\n".join(missing)


def test_each_section_of_the_design_notes_names_a_module_that_exists() -> None:
    unnamed = [title for title, text in design_sections().items()
               if not any((REPO_ROOT / path).is_file() for path in re.findall(r"`(pipeline/[\w/]+\.py)`", text))]
    assert not unnamed, unnamed
