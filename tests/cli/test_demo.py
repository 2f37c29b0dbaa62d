"""The README's first command, end to end: `pmw demo` on the offline sandbox."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import replace
from datetime import date
from functools import cache
from pathlib import Path

import dagster as dg
import pytest

from pipeline.cli.demo.end_to_end import run_demo
from pipeline.cli.demo.world import demo_world
from pipeline.engine.schema import TABLES
from pmw_sandbox import SandboxApp, SandboxConfig, plug
from pmw_sandbox.faults import Faults
from tests.support.world import strict_budget_world

WATCHLIST_PLATFORMS = {
    "orderbook_levels": ("polymarket", "kalshi", "limitless", "manifold"),
    "orderbook_snapshots": ("polymarket", "kalshi", "limitless", "manifold"),
    "profiles": ("polymarket", "kalshi"),
    "profile_trades": ("polymarket", "kalshi"),
}


@pytest.mark.slow
def test_pmw_demo_lands_every_table_for_both_platforms(tmp_path: Path) -> None:
    """The README's command as a user runs it: a process of its own, the demo's own world, the unified API,
    no DAGSTER_HOME: the runs are kept in a Dagster home under the data directory, which it names for
    `dagster dev` with the world's variables (its partitions are the world's days)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PMW_", "DAGSTER_"))}
    env.update({"PMW_DATA_DIR": str(tmp_path / "data"), "PMW_RATE_LIMIT_DB": str(tmp_path / "budget.sqlite"),
                "HOME": str(tmp_path)})  # a new user's: no ~/.dagster whose telemetry id silences Dagster's banner
    run = subprocess.run([sys.executable, "-m", "pipeline.cli.main", "demo", "--days", "1",
                          "--end", "2026-11-21"], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    lines = run.stdout.splitlines()
    assert "the unified API" in lines[0]
    assert "Telemetry:" not in run.stdout + run.stderr  # Dagster's banner: the demo's instance has telemetry off
    _assert_every_table_shown(run.stdout)
    for table, platforms in WATCHLIST_PLATFORMS.items():  # one snapshot round, and the example watch lists
        for platform in platforms:
            assert re.search(rf"^\s+{table}\s+{platform}\s+1\s+[1-9]\d*$", run.stdout, re.MULTILINE), (table, platform)
    for mart in ("orderbook_daily", "trader_daily"):
        assert re.search(rf"^\s+marts\.{mart}\s+table\s+[1-9][\d,]* rows$", run.stdout, re.MULTILINE), mart
    assert re.search(r"^market_links \(links.market_links\): [1-9]\d* linked", run.stdout, re.MULTILINE)
    parted = run.stdout.split("The three linked pairs whose prices parted most on 2026-11-21")[1]
    assert len(re.findall(r"^  gap [+-]", parted, re.MULTILINE)) == 3, parted
    for platform in ("polymarket", "kalshi"):  # each run's observation of /platforms and /health, on today
        assert re.search(rf"^\s+platform_status\s+{platform}\s+1\s+1$", run.stdout, re.MULTILINE), platform
    home = tmp_path / "data" / "dagster_home"
    assert lines[-1].endswith(f"DAGSTER_HOME={home} PMW_SANDBOX_END=2026-11-21 dagster dev -m pipeline.definitions")
    project_settings = Path(__file__).parents[2] / "pipeline" / "defs" / "dagster.yaml"
    assert (home / "dagster.yaml").read_text() == project_settings.read_text()
    with dg.DagsterInstance.from_config(str(home)) as instance:
        landed = {run.tags.get("dagster/partition") for run in instance.get_runs()
                  if run.status == dg.DagsterRunStatus.SUCCESS}
    assert {"2026-11-21|kalshi", "2026-11-21|polymarket"} <= landed


@pytest.mark.slow
def test_the_direct_demo_lands_every_table_and_leaves_the_environment_as_it_found_it(
    pipeline_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In process, through the platforms' APIs (the demo then sets the most): a world other than the
    environment's, and no PMW_DIRECT_URL, so that a write of any of them would show. The in-process sandbox
    serves a small world of that seed (the demo's own world is the subprocess test's). Asked for more days
    than that world holds, the demo widens it, and every day lands with its trades."""
    lines: list[str] = []
    world = demo_world(replace(strict_budget_world(date(2026, 11, 21)), days=1), 2, say=lines.append)
    monkeypatch.setattr(plug, "sandbox_app", cache(lambda seed, end, faults, readings, days: SandboxApp(
        SandboxConfig(world=replace(world, seed=seed, end=end, days=days), faults=Faults.parse(faults)))))
    monkeypatch.setenv("PMW_SOURCE", "direct")
    monkeypatch.delenv("PMW_DIRECT_URL", raising=False)
    before = dict(os.environ)
    assert run_demo(world, days=2, say=lines.append) == 0, lines
    assert dict(os.environ) == before
    assert lines[0] == "pmw demo: the sandbox world holds 1 day(s); widened to 2 so that every day has trades"
    assert lines[1].startswith("pmw demo: sandbox world (seed 5), the platforms' own APIs -> " + str(pipeline_env))
    assert (pipeline_env / "warehouse.duckdb").exists()
    _assert_every_table_shown("\n".join(lines), days=2)
    assert lines[-1].startswith(f"See the runs in Dagster's UI (http://127.0.0.1:3000): "
                                f"DAGSTER_HOME={pipeline_env / 'dagster_home'} ")


def _assert_every_table_shown(out: str, days: int = 1) -> None:
    """The demo's summary: `days` days of every table for both platforms, and the warehouse counting every trade
    that the backfill landed."""
    for table in TABLES:
        for platform in ("polymarket", "kalshi"):
            shown = rf"^\s+{table}\s+{platform}\s+{days}\s+[1-9]\d*$"
            assert re.search(shown, out, re.MULTILINE), (table, platform)
    counted = re.search(r"SELECT count\(\*\) FROM raw.trades -> (\d+) \(the backfill landed (\d+) trades\)", out)
    assert counted and counted.group(1) == counted.group(2)
    trades_rows = sum(int(m) for m in re.findall(rf"^\s+trades\s+\w+\s+{days}\s+(\d+)$", out, re.MULTILINE))
    assert trades_rows == int(counted.group(1))
