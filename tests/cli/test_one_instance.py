"""One Dagster instance for every `pmw` command: without DAGSTER_HOME, `pmw backfill` after `pmw demo` records its
runs in the data dir's own home, where the demo recorded its own, and rebuilds the marts it fed."""

from __future__ import annotations

from dataclasses import replace
from datetime import date
from functools import cache
from pathlib import Path

import dagster as dg
import duckdb
import pytest

from pipeline.cli.demo.world import world_env
from pipeline.cli.main import main
from pipeline.engine.config import DIRECT_SANDBOX
from pmw_sandbox import SandboxApp, SandboxConfig, plug
from pmw_sandbox.faults import Faults
from tests.support.world import strict_budget_world

DEMO_DAY, OTHER_DAY = date(2026, 11, 21), date(2026, 11, 20)
PLATFORMS = ("polymarket", "kalshi")


@pytest.mark.slow
def test_a_backfill_after_the_demo_lands_in_the_demos_instance_and_its_marts(
    pipeline_env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The direct demo's small world (test_demo.py), two days of it: `pmw demo` lands the last, then `pmw backfill`
    the day before, in the same data dir, neither with DAGSTER_HOME (the sandbox serves the small world's sizes)."""
    world = replace(strict_budget_world(DEMO_DAY), days=2)
    monkeypatch.setattr(plug, "sandbox_app", cache(lambda seed, end, faults, readings, days: SandboxApp(
        SandboxConfig(world=replace(world, seed=seed, end=end, days=days), faults=Faults.parse(faults)))))
    for name, value in {"PMW_SOURCE": "direct", "PMW_DIRECT_URL": DIRECT_SANDBOX, **world_env(world)}.items():
        monkeypatch.setenv(name, value)
    demo = ["demo", "--days", "1", "--seed", str(world.seed), "--end", DEMO_DAY.isoformat(), "--world-days", "2"]
    assert main(demo) == 0, capsys.readouterr().out
    capsys.readouterr()
    assert main(["backfill", "--platform", ",".join(PLATFORMS), "--start", OTHER_DAY.isoformat()]) == 0
    out = capsys.readouterr().out
    with dg.DagsterInstance.from_config(str(pipeline_env / "dagster_home")) as instance:
        materialised = instance.get_materialized_partitions(dg.AssetKey("trades"))
    assert {f"{day}|{platform}" for day in (OTHER_DAY, DEMO_DAY) for platform in PLATFORMS} <= materialised
    assert "SQL models: no Dagster daemon runs on this instance" in out, out
    with duckdb.connect(str(pipeline_env / "warehouse.duckdb"), read_only=True) as db:
        days = {row[0] for row in db.sql("SELECT DISTINCT day FROM marts.platform_daily").fetchall()}
    assert {OTHER_DAY, DEMO_DAY} <= days
