"""Watched traders end to end on the in-process sandbox: two days of profiles and trades, paged in small pages
with repeated items, each trade once across the days, the unknown trader a reject, the mart's day-on-day change.

(No `from __future__ import annotations`: Dagster reads annotations live.)
"""

from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, date, datetime, time, timedelta
from functools import cache
from pathlib import Path

import dagster as dg
import duckdb
import numpy as np
import polars as pl
import pytest

from pipeline.cli.sql.models import run_sql
from pipeline.defs.common.resources import PipelineResource
from pipeline.engine.lake.store import Lake
from pipeline.engine.normalize.partitions import profiles as traders_rows
from pipeline.engine.schema import MAX_LIMIT, Platform
from pipeline.engine.sources.http import ApiError
from pmw_sandbox import Faults, SandboxApp, SandboxConfig, plug
from pmw_sandbox.profiles import Ledger
from pmw_sandbox.readings import Readings
from pmw_sandbox.world import users
from tests.support.location import trader_profiles
from tests.support.runs import DAY, shared_instance
from tests.support.world import strict_budget_world

WORLD = strict_budget_world(DAY)
DAYS = [DAY - timedelta(days=1), DAY]
TRADERS = [users(Platform.KALSHI)[i]["name"] for i in (3, 4)]
UNKNOWN = "nobody-trades-here"


@cache
def _app(seed: int, end: date, faults: str, readings: str, days: int) -> SandboxApp:
    return SandboxApp(SandboxConfig(world=replace(WORLD, seed=seed, end=end, days=days), faults=Faults.parse(faults),
                                    readings=Readings.parse(readings)))


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Two days of the watched traders landed (each day's metrics as of the midnight after it), in pages of 7
    trades whose last 2 come again at the top of the next page."""
    with pytest.MonkeyPatch.context() as patch:
        root = _environment(patch, tmp_path_factory.mktemp("profiles"))
        for day in (*DAYS, DAY):  # the last day twice: a rerun lands the same rows
            assert _land(day).success
        yield root / "data"


def _environment(patch: pytest.MonkeyPatch, root: Path, readings: str = "") -> Path:
    """The watched traders (and the unknown one) on the in-process sandbox of `readings`, under `root`."""
    watchlist = root / "traders.csv"
    watchlist.write_text("".join(f"kalshi,{name}\n" for name in [*TRADERS, UNKNOWN]))
    for name in ("PMW_API_URL", "PMW_API_KEY", "PMW_PLATFORMS", "PMW_SANDBOX_FAULTS", "DAGSTER_HOME"):
        patch.delenv(name, raising=False)
    for name, value in {"PMW_SOURCE": "sandbox", "PMW_DATA_DIR": str(root / "data"),
                        "PMW_SANDBOX_SEED": str(WORLD.seed), "PMW_SANDBOX_END": DAY.isoformat(),
                        "PMW_SANDBOX_DAYS": str(WORLD.days), "PMW_RATE_LIMIT_DB": str(root / "budget.sqlite"),
                        "PMW_TRADER_WATCHLIST": str(watchlist), "PMW_SANDBOX_FAULTS": "duplicate_items=2",
                        "PMW_SANDBOX_READINGS": readings}.items():
        patch.setenv(name, value)
    patch.setattr(plug, "sandbox_app", _app)
    patch.setitem(MAX_LIMIT, "profile_trades", 7)
    return root


def _land(day: date, readings: str = "") -> dg.ExecuteInProcessResult:
    _app(WORLD.seed, DAY, "duplicate_items=2", readings, WORLD.days).live_at = datetime.combine(
        day + timedelta(days=1), time(0, 30), UTC)
    return dg.materialize([trader_profiles], partition_key=dg.MultiPartitionKey(
        {"platform": "kalshi", "date": day.isoformat()}), resources={"pipeline": PipelineResource()},
        instance=shared_instance(), raise_on_error=False)


def _world_trade_ids(trader: str, day: date) -> set[str]:
    app = _app(WORLD.seed, DAY, "duplicate_items=2", "", WORLD.days)
    index = [u["name"] for u in users(Platform.KALSHI)].index(trader)
    start = datetime.combine(day, time(), UTC)
    rows = Ledger.of(app.world, Platform.KALSHI, int(start.timestamp()) + 86_399).newest_first(index)
    records = [r for market, i in rows for r in app.world.trade_records_at(market, np.array([i]))]
    return {r["trade_id"] for r in records if r["timestamp"] >= start.timestamp()}


def test_each_days_trades_land_once_the_unknown_trader_is_a_reject_and_the_mart_follows(data_dir: Path) -> None:
    lake = Lake(data_dir / "lake")
    landed = {day: lake.read_partition("profile_trades", "kalshi", day) for day in DAYS}
    for day, rows in landed.items():
        assert rows is not None
        for trader in TRADERS:
            mine = rows.filter(pl.col("trader") == trader)["trade_id"]
            assert mine.n_unique() == mine.len()
            assert set(mine) == _world_trade_ids(trader, day), (trader, day)
    first, second = (landed[day] for day in DAYS)
    assert first is not None and second is not None and not set(first["trade_id"]) & set(second["trade_id"])
    profiles = lake.read_partition("profiles", "kalshi", DAY)
    assert profiles is not None and sorted(profiles["trader"]) == sorted(TRADERS)
    rejects = lake.read_rejects("profiles", "kalshi", DAY)
    assert rejects is not None and rejects["reason"].str.contains(UNKNOWN).all()

    # The mart: each day's metrics and their change since the day before, and the day's trades.
    assert run_sql(["+trader_daily"], say=lambda _: None, instance=dg.DagsterInstance.ephemeral())
    with duckdb.connect(str(data_dir / "warehouse.duckdb"), read_only=True) as db:
        mart = db.sql("SELECT trader, day, volume, pnl, volume_change, pnl_change, trades FROM marts.trader_daily "
                      "ORDER BY trader, day").pl()
    both = pl.concat(_partitions(lake, "profiles"))
    expected = both.sort("trader", "date").select(
        "trader", pl.col("date").alias("day"), "volume", "pnl",
        (pl.col("volume") - pl.col("volume").shift(1)).over("trader").alias("volume_change"),
        (pl.col("pnl") - pl.col("pnl").shift(1)).over("trader").alias("pnl_change"))
    assert mart.drop("trades").equals(expected)
    trades = pl.concat(_partitions(lake, "profile_trades"))
    counted = trades.group_by("trader", pl.col("date").alias("day")).len("trades")
    assert mart.join(counted, on=["trader", "day"], how="left").select(
        (pl.col("trades") == pl.col("trades_right").fill_null(0)).all()).item()


def test_trades_held_under_data_land_as_under_trades(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`/profile/trades` answering `{data: [...], pagination, meta}` (reading profile_trades_envelope=data)."""
    readings = "profile_trades_envelope=data"
    lake = Lake(_environment(monkeypatch, tmp_path, readings) / "data" / "lake")
    assert _land(DAY, readings).success
    rows = lake.read_partition("profile_trades", "kalshi", DAY)
    assert rows is not None
    for trader in TRADERS:
        assert set(rows.filter(pl.col("trader") == trader)["trade_id"]) == _world_trade_ids(trader, DAY), trader


def test_the_profiles_land_when_the_trades_fail(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The traders' trades cannot be read: the profiles that /profile/info answered land, the step fails naming
    the error, and no part of the day's trades lands."""
    lake = Lake(_environment(monkeypatch, tmp_path) / "data" / "lake")

    def refused(*_: object) -> None:
        raise ApiError("GET /profile/trades: HTTP 500 INTERNAL_ERROR")

    monkeypatch.setattr(traders_rows, "trader_trades", refused)
    result = _land(DAY)
    assert not result.success
    assert "HTTP 500 INTERNAL_ERROR" in str(result.get_step_failure_events()[0].event_specific_data.error)
    profiles = lake.read_partition("profiles", "kalshi", DAY)
    assert profiles is not None and sorted(profiles["trader"]) == sorted(TRADERS)
    assert lake.read_partition("profile_trades", "kalshi", DAY) is None
    assert [event.asset_key.path[-1] for event in result.get_asset_materialization_events()] == ["profiles"]


def _partitions(lake: Lake, table: str) -> list[pl.DataFrame]:
    frames = [lake.read_partition(table, "kalshi", day) for day in DAYS]
    return [frame for frame in frames if frame is not None]
