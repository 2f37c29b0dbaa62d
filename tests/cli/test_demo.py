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

import pytest

from pipeline.cli.demo import run_demo
from pipeline.engine.schema import TABLES
from pmw_sandbox import SandboxApp, SandboxConfig, plug
from pmw_sandbox.faults import Faults
from tests.support.world import strict_budget_world


@pytest.mark.slow
def test_pmw_demo_lands_every_table_for_both_platforms(tmp_path: Path) -> None:
    """The README's command as a user runs it: a process of its own, the demo's own world, the unified API."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PMW_", "DAGSTER_"))}
    env.update({"PMW_DATA_DIR": str(tmp_path / "data"), "PMW_RATE_LIMIT_DB": str(tmp_path / "budget.sqlite")})
    run = subprocess.run([sys.executable, "-m", "pipeline.cli.main", "demo", "--days", "1", "--end", "2026-11-21"],
                         env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    _assert_every_table_shown(run.stdout)
    assert "the unified API" in run.stdout.splitlines()[0]


@pytest.mark.slow
def test_the_direct_demo_lands_every_table_and_leaves_the_environment_as_it_found_it(
    pipeline_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In process, through the platforms' APIs (the demo then sets the most): a world other than the
    environment's, and no PMW_DIRECT_URL, so that a write of any of them would show. The in-process sandbox
    serves a small world of that seed (the demo's own world is the subprocess test's)."""
    world = strict_budget_world(date(2026, 11, 21))
    monkeypatch.setattr(plug, "sandbox_app", cache(lambda seed, end, faults, readings, days: SandboxApp(
        SandboxConfig(world=replace(world, seed=seed, end=end, days=days), faults=Faults.parse(faults)))))
    monkeypatch.setenv("PMW_SOURCE", "direct")
    monkeypatch.delenv("PMW_DIRECT_URL", raising=False)
    before = dict(os.environ)
    lines: list[str] = []
    assert run_demo(world, days=1, say=lines.append) == 0, lines
    assert dict(os.environ) == before
    assert lines[0].startswith("pmw demo: sandbox world (seed 5), the platforms' own APIs -> " + str(pipeline_env))
    assert (pipeline_env / "warehouse.duckdb").exists()
    _assert_every_table_shown("\n".join(lines))


def _assert_every_table_shown(out: str) -> None:
    """The demo's summary: one day of every table for both platforms, and the warehouse counting every trade
    that the backfill landed."""
    for table in TABLES:
        for platform in ("polymarket", "kalshi"):
            assert re.search(rf"^\s+{table}\s+{platform}\s+1\s+[1-9]\d*$", out, re.MULTILINE), (table, platform)
    counted = re.search(r"SELECT count\(\*\) FROM raw.trades -> (\d+) \(the backfill landed (\d+) trades\)", out)
    assert counted and counted.group(1) == counted.group(2)
    trades_rows = sum(int(m) for m in re.findall(r"^\s+trades\s+\w+\s+1\s+(\d+)$", out, re.MULTILINE))
    assert trades_rows == int(counted.group(1))
