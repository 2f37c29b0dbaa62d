"""The product uses Dagster's public API: an import of a private module or name of Dagster's packages
(`dagster._core...`) carries, on its own lines, a comment saying why no public one serves."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tests.support.paths import REPO_ROOT
from tests.support.source_code import Module, imports, is_private, modules, write_tree

DIRECTIVE = re.compile(r"^(noqa|type:|pragma|fmt:)")  # a tool's switch, not a reason


def _private_dagster(name: str) -> bool:
    top, *rest = name.split(".")
    return top.startswith("dagster") and any(map(is_private, rest))


def _has_reason(module: Module, statement: ast.Import | ast.ImportFrom) -> bool:
    """A comment on one of the statement's lines that is more than a tool's switch (`# noqa: F401`)."""
    lines = range(statement.lineno, (statement.end_lineno or statement.lineno) + 1)
    return any(not DIRECTIVE.match(module.comments[line]) for line in lines if line in module.comments)


def unexplained_private_imports(root: Path = REPO_ROOT) -> list[str]:
    found = []
    for module in modules(root):
        for imported in imports(module):
            if _private_dagster(imported.reached) and not _has_reason(module, imported.statement):
                named = imported.module if _private_dagster(imported.module) else imported.reached
                found.append(module.offence(imported.line, f"{named} is private to Dagster and no comment says why"))
    return found


def test_every_private_dagster_import_says_why() -> None:
    found = unexplained_private_imports()
    assert not found, "\n".join(found)


def test_a_private_dagster_import_without_a_reason_is_seen(tmp_path: Path) -> None:
    write_tree(tmp_path, {"pipeline/cli/status.py": (
        "import dagster as dg\n"
        "from dagster._core.event_api import PartitionKeyFilter  # not exported: the filter the history takes\n"
        "from dagster._core.errors import DagsterError  # noqa: F401\n"
        "import dagster._check\n"
        "from dagster import _seven\n"
        "from dagster._core.storage import (\n    Status,  # not exported: what the records carry\n)\n"
    )})
    assert [offence.split(": ", 1)[0] for offence in unexplained_private_imports(tmp_path)] == [
        "pipeline/cli/status.py:3", "pipeline/cli/status.py:4", "pipeline/cli/status.py:5"]
