"""`pmw demo` with the lake on an object store (PMW_LAKE_URL=s3://...), against a real S3-protocol server on loopback:
every table lands in the bucket, the marts build from it, and `pmw query` answers from it."""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import date
from functools import cache
from pathlib import Path

import pytest

from pipeline.cli.demo.end_to_end import run_demo
from pipeline.cli.main import main
from pipeline.engine.config import Settings
from pipeline.engine.lake.store import Lake
from pmw_sandbox import SandboxApp, SandboxConfig, plug
from pmw_sandbox.faults import Faults
from tests.cli.test_demo import _assert_every_table_shown
from tests.support.world import strict_budget_world


@pytest.mark.slow
def test_the_demo_lands_every_table_in_the_bucket_and_pmw_query_answers_from_it(
    pipeline_env: Path, s3_lake_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """In process, on a world of one day (the demo's own world is test_demo's subprocess test)."""
    world = replace(strict_budget_world(date(2026, 11, 21)), days=1)
    monkeypatch.setattr(plug, "sandbox_app", cache(lambda seed, end, faults, readings, days: SandboxApp(
        SandboxConfig(world=replace(world, seed=seed, end=end, days=days), faults=Faults.parse(faults)))))
    monkeypatch.setenv("PMW_LAKE_URL", s3_lake_url)
    lines: list[str] = []
    assert run_demo(world, days=1, say=lines.append) == 0, lines
    out = "\n".join(lines)
    _assert_every_table_shown(out)
    assert re.search(r"^\s+marts\.platform_daily\s+table\s+[1-9][\d,]* rows$", out, re.MULTILINE), out
    landed = int(re.search(r"the backfill landed (\d+) trades", out).group(1))  # type: ignore[union-attr]

    lake = Lake.of(Settings.from_env())
    assert lake.url == s3_lake_url and lake.partitions("trades") == [("kalshi", world.end_day),
                                                                     ("polymarket", world.end_day)]
    assert not list((pipeline_env / "lake").rglob("*.parquet")), "nothing lands in the local folder"
    assert not list(lake.root.rglob("*.parquet")), "the staged files are gone once uploaded"
    capsys.readouterr()
    assert main(["query", "--format", "csv", "SELECT count(*) AS trades FROM raw.trades"]) == 0
    assert capsys.readouterr().out.splitlines() == ["trades", str(landed)]
    assert main(["query", "--format", "csv", "SELECT count(*) > 0 AS built FROM marts.platform_daily"]) == 0
    assert capsys.readouterr().out.splitlines() == ["built", "true"]
