"""Every command checks every setting before it runs anything: a bad one is one line naming the variable, its
value and what is allowed, exit 2 (no traceback, nothing run)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.cli.main import main
from tests.support.runs import DAY

COMMANDS = {
    "demo": ["demo", "--days", "1"],
    "backfill": ["backfill", "--platform", "kalshi", "--start", DAY.isoformat()],
    "sql": ["sql"],
    "status": ["status"],
    "query": ["query", "SELECT 1"],
    "report": ["report"],
}
BAD = {  # variable: (value, what the line must also say)
    "PMW_SOURCE": ("apii", "sandbox"),
    "PMW_PLATFORMS": ("manifold", "polymarket"),
    "PMW_RATE_LIMIT_PER_MIN": ("abc", "whole number"),
    "PMW_DATA_DIR": ("a-file", "is a file"),
}


@pytest.mark.parametrize("variable", list(BAD))
@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_bad_setting_is_one_line_and_exit_2(command: str, variable: str, pipeline_env: Path, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    value, allowed = BAD[variable]
    if variable == "PMW_DATA_DIR":
        (tmp_path / value).write_text("not a folder")
        value = str(tmp_path / value)
    monkeypatch.setenv(variable, value)
    monkeypatch.setenv("DAGSTER_HOME", "")  # the demo would otherwise set it for the rest of the session
    code = main(COMMANDS[command])
    captured = capsys.readouterr()
    lines = (captured.out + captured.err).splitlines()
    assert len(lines) == 1, f"{len(lines)} lines: {lines[-3:]}"
    assert code == 2
    assert lines[0].startswith(f"pmw {command}: {variable}") and value in lines[0] and allowed in lines[0], lines
    assert not pipeline_env.exists() or variable == "PMW_DATA_DIR"  # nothing ran: no data dir made
