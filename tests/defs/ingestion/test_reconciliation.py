"""The reconciliation checks catch what a rule misses: a partition whose markets' fresh records say they traded on
the day, but whose trades a skip rule left out, fails `traded_markets_have_trades` (an error) naming them; so does
a day whose records, synced later, say nothing of it, where the day's price history shows the trades."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path

import dagster as dg
import polars as pl
import pytest

from pipeline.engine.lake.store import Lake
from pipeline.engine.normalize.partitions import unified as partition
from pipeline.engine.schema import Platform
from pmw_sandbox import plug
from pmw_sandbox.app import SandboxApp, SandboxConfig
from pmw_sandbox.catalogue import WorldConfig
from pmw_sandbox.readings import Readings
from pmw_sandbox.world import World
from tests.support.runs import land_directly, materialise

WORLD = WorldConfig(seed=3, end=date(2026, 11, 21), days=2, series_per_platform=2, events_per_series=2,
                    markets_per_event=3, trades_per_market_day=40, multivariate_markets=1)
DAY = WORLD.end_day  # the world's catalogue is synced at this day's end: its records' 24 hours are the day


@pytest.fixture
def small_world(pipeline_env: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    app = SandboxApp(SandboxConfig(world=WORLD))
    monkeypatch.setattr(plug, "sandbox_app", lambda seed, end, faults, readings, days: app)
    return pipeline_env


def _trading_markets(platform: Platform, day: date, config: WorldConfig = WORLD) -> set[str]:
    """The markets with trades on the day, by the world itself."""
    world = World(config)
    start = int(datetime.combine(day, time(), UTC).timestamp())
    return {m.id for m in world.markets(platform)
            if any(start <= t["timestamp"] < start + 86_400 for t in world.trade_records(m, 0, 10_000, True))}


@pytest.mark.parametrize("platform", ["polymarket", "kalshi"])
def test_markets_left_out_by_the_skip_rule_fail_the_trades_reconciliation_naming_them(
    small_world: Path, monkeypatch: pytest.MonkeyPatch, platform: str,
) -> None:
    rule = partition.trade_markets
    dropped: list[str] = []

    def skipping_two(markets: pl.DataFrame, *window: int) -> list[str]:
        asked = rule(markets, *window)
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


def test_a_day_whose_records_say_nothing_of_it_is_held_against_its_price_history_in_a_run(
    small_world: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    day = WORLD.start_day  # the catalogue is synced a day later: its records' volumes are of the next day
    traded = _trading_markets(Platform.POLYMARKET, day)
    rule = partition.trade_markets
    dropped: list[str] = []

    def skipping_two_that_traded(markets: pl.DataFrame, *window: int) -> list[str]:
        asked = rule(markets, *window)
        dropped[:] = [m for m in asked if m in traded][:2]
        return [m for m in asked if m not in dropped]

    monkeypatch.setattr(partition, "trade_markets", skipping_two_that_traded)
    result = materialise("polymarket", day)

    assert result.success and len(dropped) == 2
    failed = {e.check_name: e for e in result.get_asset_check_evaluations() if not e.passed}
    assert set(failed) == {"traded_markets_have_trades"}
    check = failed["traded_markets_have_trades"]
    assert check.severity == dg.AssetCheckSeverity.ERROR
    assert check.metadata["concerned"].value == sorted(dropped)
    # what the service said of its answers, kept in the partitions' metadata
    [markets] = result.asset_materializations_for_node("markets")
    listing = markets.metadata["service_listing"].value["markets"]
    assert listing["totals"] == [listing["listed"]] and listing["ended_by_server"]
    assert markets.metadata["service_data_freshness"].value["newest"] == "2026-11-22T00:00:00Z"
    [prices] = result.asset_materializations_for_node("price_history")
    answered = prices.metadata["service_price_answers"].value
    assert answered["answers"] > 0 and answered["points"] == answered["total_points"] > 0


def test_under_a_stale_listing_the_skip_rule_that_trusted_any_record_is_caught(
    pipeline_env: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The issue's case: records synced before later trades, and the skip rule as it was (a last trade before the
    day, however old the record): the markets it skipped that traded are named by the trades reconciliation."""
    world = replace(WORLD, days=3)  # its first day has a market whose stale record misleads the old rule
    app = SandboxApp(SandboxConfig(world=world, readings=Readings(stale_listing=True)))
    monkeypatch.setattr(plug, "sandbox_app", lambda seed, end, faults, readings, days: app)

    def trusting_any_record(markets: pl.DataFrame, start: int, end: int) -> list[str]:
        latest = pl.col("last_trades").list.eval(pl.element().struct.field("timestamp")).list.max()
        return markets.filter(~(latest.dt.epoch("s") < start).fill_null(False)).sort("id")["id"].to_list()

    monkeypatch.setattr(partition, "trade_markets", trusting_any_record)
    day = world.start_day + timedelta(days=1)
    result = materialise("polymarket", day)

    landed = Lake(pipeline_env / "lake").read_partition("trades", "polymarket", day)
    assert result.success and landed is not None
    skipped = _trading_markets(Platform.POLYMARKET, day, world) - set(landed["market_id"])
    assert skipped  # the stale records misled the rule
    failed = {e.check_name: e for e in result.get_asset_check_evaluations() if not e.passed}
    assert failed["traded_markets_have_trades"].metadata["concerned"].value == sorted(skipped)
