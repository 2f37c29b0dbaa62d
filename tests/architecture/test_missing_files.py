"""No comment, docstring or page sends the reader to a file the repository does not hold: the design notes, the
API specifications and the shared folder that earlier rounds named are not here, and what they said is in docs/."""

from __future__ import annotations

import re
from pathlib import Path

from tests.support.paths import REPO_ROOT

NOT_HERE = re.compile(r"ARCHITECTURE\.md|\bspec/[\w.-]+\.md|\.\./shared\b")
WRITTEN = ("README.md", "pyproject.toml", "docs", "pipeline", "pmw_sandbox", "tests", "benchmarks", "examples",
           "deploy", "dbt_like_sql")
TEXT = {".py", ".md", ".sql", ".yaml", ".yml", ".toml", ".txt", ".cfg"}


def references_to_files_not_here(root: Path = REPO_ROOT) -> list[str]:
    found = []
    for top in (root / name for name in WRITTEN):
        for path in [top] if top.is_file() else sorted(top.rglob("*")):
            if path.suffix not in TEXT or not path.is_file():
                continue
            for number, line in enumerate(path.read_text(errors="replace").splitlines(), start=1):
                if NOT_HERE.search(line):
                    found.append(f"{path.relative_to(root).as_posix()}:{number}: {line.strip()}")
    return found


def test_nothing_points_at_a_file_the_repository_lacks() -> None:
    found = references_to_files_not_here()
    assert not found, "\n".join(found)


def test_a_pointer_to_a_missing_file_is_seen(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "lake.md").write_text("# Lake\nThe layout is in docs/architecture.md.\n")
    (tmp_path / "pipeline").mkdir()
    (tmp_path / "pipeline" / "store.py").write_text('"""Layout (see ARCHITECTURE' + '.md)."""\n# see spec/' +
                                                    "platforms.md and ../" + "shared/notes\n")
    found = references_to_files_not_here(tmp_path)
    assert [offence.split(": ", 1)[0] for offence in found] == ["pipeline/store.py:1", "pipeline/store.py:2"]
