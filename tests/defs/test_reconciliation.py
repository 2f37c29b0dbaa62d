"""The reconciliation checks catch what a rule misses: a partition whose markets' fresh records say they traded on
the day, but whose trades a skip rule left out, fails `traded_markets_have_trades` (an error) naming them."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import dagster as dg
import polars as pl
import pytest

from pipeline.engine.sources import partition
from pmw_sandbox import plug
from pmw_sandbox.app import SandboxApp, SandboxConfig
from pmw_sandbox.catalogue import WorldConfig
from tests.support.runs import land_directly

WORLD = WorldConfig(seed=3, end=date(2026, 11, 21), days=2, series_per_platform=2, events_per_series=2,
                    markets_per_event=3, trades_per_market_day=40, multivariate_markets=1)
DAY = WORLD.end_day  # the world's catalogue is synced at this day's end: its records' 24 hours are the day


@pytest.fixture
def small_world(pipeline_env: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    app = SandboxApp(SandboxConfig(world=WORLD))
    monkeypatch.setattr(plug, "sandbox_app", lambda seed, end, faults, readings, days: app)
    return pipeline_env


@pytest.mark.parametrize("platform", ["polymarket", "kalshi"])
def test_markets_left_out_by_the_skip_rule_fail_the_trades_reconciliation_naming_them(
    small_world: Path, monkeypatch: pytest.MonkeyPatch, platform: str,
) -> None:
    rule = partition.trade_markets
    dropped: list[str] = []

    def skipping_two(markets: pl.DataFrame, since: int) -> list[str]:
        asked = rule(markets, since)
        dropped[:] = asked[:2]
        return asked[2:]

    monkeypatch.setattr(partition, "trade_markets", skipping_two)
    run = land_directly(platform, DAY)

    assert run.success, run.failures()
    check = run.checks["trades.traded_markets_have_trades"]
    assert not check.passed and check.severity == dg.AssetCheckSeverity.ERROR
    assert check.metadata["concerned"].value == sorted(dropped)
    assert all(market in (check.description or "") for market in dropped)
    volume = run.checks["trades.volume_matches_trades"]
    assert not volume.passed and set(volume.metadata["concerned"].value) == set(dropped)
    failed = {name for name, result in run.checks.items() if not result.passed}
    assert failed == {"trades.traded_markets_have_trades", "trades.volume_matches_trades"}
