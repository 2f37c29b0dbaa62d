"""`pmw backfill` parses its settings once, before the first partition, and hands them to every run."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from pathlib import Path

import pytest

from pipeline.cli.main import main
from pipeline.engine.config import Settings
from tests.support.runs import DAY


def test_the_settings_are_parsed_once_for_the_whole_backfill(
    pipeline_env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    parsed: list[Settings] = []
    parse = Settings.from_env

    def counted(env: Mapping[str, str] | None = None, *, credentials: bool = True) -> Settings:
        parsed.append(parse(env, credentials=credentials))
        return parsed[-1]

    monkeypatch.setattr(Settings, "from_env", counted)
    start = DAY - timedelta(days=1)
    code = main(["backfill", "--platform", "polymarket,kalshi", "--start", start.isoformat(),
                 "--end", DAY.isoformat(), "--assets", "markets", "--no-models"])
    lines = capsys.readouterr().out.splitlines()
    assert code == 0, lines
    assert sum(line.startswith("[") for line in lines) == 4  # two days of two platforms: four runs
    assert len(parsed) == 1


def test_a_bad_setting_exits_2_naming_the_variable_and_its_value(
    pipeline_env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PMW_RATE_LIMIT_PER_MIN", "lots")
    assert main(["backfill", "--platform", "kalshi", "--start", DAY.isoformat()]) == 2
    assert capsys.readouterr().err == "pmw backfill: PMW_RATE_LIMIT_PER_MIN must be a whole number, got 'lots'\n"
