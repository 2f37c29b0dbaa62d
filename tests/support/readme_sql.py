"""The SQL examples of the READMEs, run as `pmw query` runs them, by a test that has landed a warehouse."""

from __future__ import annotations

import io
import re
from pathlib import Path

from pipeline.cli.query.warehouse import run_query
from tests.support.paths import REPO_ROOT


def readme_sql() -> list[str]:
    """Every SQL example of the README: its fenced sql blocks, and the statements of the `pmw query` commands of it
    and of dbt_like_sql/README.md (whose sql blocks are templates of models and tests, not questions)."""
    readme = (REPO_ROOT / "README.md").read_text()
    commands = readme + (REPO_ROOT / "dbt_like_sql" / "README.md").read_text()
    blocks = re.findall(r"```sql\n(.*?)```", readme, re.DOTALL)
    return blocks + re.findall(r'pmw query[^"\n]* "((?:SELECT|WITH|FROM)\b[^"]*)"', commands)


def assert_readme_sql_answers(warehouse: Path) -> None:
    """Each example runs on the warehouse, read-only as `pmw query` opens it, and answers with at least one row."""
    for sql in readme_sql():
        out = io.StringIO()
        run_query(warehouse, sql, "csv", out=out)
        assert len(out.getvalue().splitlines()) > 1, sql  # a header and at least one row
