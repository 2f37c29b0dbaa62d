"""One Dagster instance for every `pmw` command: without DAGSTER_HOME, `pmw backfill` after `pmw demo` records its
runs in the data dir's own home, where the demo recorded its own, and rebuilds the marts it fed (unless a Dagster
daemon runs on that instance: its sensor rebuilds them)."""

from __future__ import annotations

import time
from dataclasses import replace
from datetime import date
from functools import cache
from pathlib import Path

import dagster as dg
import duckdb
import pytest
from dagster._daemon.types import DaemonHeartbeat  # not exported: the record a daemon writes, made here

from pipeline.cli.common.instance import DAEMON_ALIVE_S, SENSOR_DAEMON, sensor_daemon_running
from pipeline.cli.demo.world import world_env
from pipeline.cli.main import main
from pipeline.cli.sql.models import models_fed_by, rebuild_fed_models, select_models
from pipeline.defs.common.resources import PipelineResource
from pipeline.defs.sql_models.rebuild_sensor import SENSOR_NAME
from pipeline.engine.config import DIRECT_SANDBOX
from pipeline.engine.warehouse.project import DEFAULT_SQL_DIR, load_project
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


def test_a_recent_sensor_heartbeat_means_a_running_daemon_which_then_rebuilds_the_models() -> None:
    instance = dg.DagsterInstance.ephemeral()
    assert not sensor_daemon_running(instance)  # never beat
    instance.add_daemon_heartbeat(DaemonHeartbeat(time.time() - DAEMON_ALIVE_S - 1, SENSOR_DAEMON, None, None))
    assert not sensor_daemon_running(instance)  # a daemon that stopped
    instance.add_daemon_heartbeat(DaemonHeartbeat(time.time(), SENSOR_DAEMON, None, None))
    assert sensor_daemon_running(instance)
    said: list[str] = []
    assert rebuild_fed_models(["trades"], PipelineResource(), instance, said.append)
    assert said == [f"SQL models: left to the Dagster daemon running on this instance (its sensor {SENSOR_NAME})"]


def test_the_models_fed_are_those_reading_a_landed_table_and_those_downstream() -> None:
    project = load_project(DEFAULT_SQL_DIR)
    fed = {str(relation) for relation in select_models(project, models_fed_by(project, ["profiles"]))}
    assert fed == {"staging.stg_profiles", "marts.trader_daily"}
    assert "marts.platform_daily" in {str(r) for r in select_models(project, models_fed_by(project, ["trades"]))}
    assert models_fed_by(project, []) == []
