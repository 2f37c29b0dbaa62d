"""The switch matrix: one multi-day world landed through every reading of the spec's silent points.

Each reading alone, and every switch flipped at once, must land exactly the world's ground truth with no check
failing (the reconciliation checks among them): the markets live on each day, their events and series, every
trade of the day once (same ids, prices, sizes, times and outcome names), every price point of the day once
(stored under its period's start), each joining a market of its partition. The defaults and every switch flipped
at once land through real Dagster runs; each reading alone through the assets' steps invoked directly
(tests.support.runs.land_directly), since a run's own machinery, the same whatever the reading, costs most of a
run's time. Pages are made small so that every market's trades span several pages and every reading of paging
is exercised.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from functools import cache
from pathlib import Path

import polars as pl
import pytest

from pipeline.engine.lake.store import Lake
from pipeline.engine.schema import LOWEST_DOCUMENTED_LIMIT, MARKET_PLATFORMS, MAX_LIMIT, TABLES
from pmw_sandbox import plug
from pmw_sandbox.app import SandboxApp, SandboxConfig
from pmw_sandbox.catalogue import WorldConfig
from pmw_sandbox.readings import Readings
from pmw_sandbox.world import World
from tests.support.readings import changes_markets, each_alone, every_other
from tests.support.runs import land_directly, materialise
from tests.support.world import is_live_on

WORLD = WorldConfig(seed=3, end=date(2026, 11, 21), days=3, series_per_platform=2, events_per_series=2,
                    markets_per_event=3, trades_per_market_day=40, multivariate_markets=1)
DAYS = [WORLD.end_day - timedelta(days=1), WORLD.end_day]
PLATFORMS = [p.value for p in MARKET_PLATFORMS]
# Price history capped at 50 points an answer: a day of one binary market (27 hourly periods asked) is over it, so
# answers are cut by markets and then in time (pipeline.engine.sources.unified.UnifiedSource.price_pages).
SMALL_PAGES = {"markets": 7, "events": 5, "series": 3, "trades": 12, "price_history": 50}
SMALLER_PAGES = {"markets": 4, "events": 3, "series": 2}  # a server's own maxima, below those asked for
# The orderbook reading (`book_order`) and the switches of the sports endpoints change nothing these five tables
# read (tests/defs/orderbooks/test_orderbooks.py and tests/engine/test_sports.py land under them); flipped with
# all the others here, they must still change nothing.
READINGS = [Readings(), *(r for r in each_alone() if changes_markets(r)), every_other()]
# The days each reading lands: the defaults and the all-flipped reading land both, each switch alone the
# earlier one, which is the harder of the two (its trades lie behind the next day's in newest-first paging).
ALL_DAYS = (Readings(), every_other())


@pytest.fixture(scope="module")
def truth() -> dict[tuple[str, date], dict[str, pl.DataFrame]]:
    """What every partition of the world must hold, from the world itself."""
    world = World(WORLD)
    expected = {}
    for platform in MARKET_PLATFORMS:
        for day in DAYS:
            start = int(datetime.combine(day, time(), UTC).timestamp())
            live = [m for m in world.markets(platform) if is_live_on(m, day, world.as_of)]
            trades = [t for m in live for t in world.trade_records(m, 0, world.trade_count(m, True), True)
                      if start <= t["timestamp"] < start + 86_400]
            points = [p for m in live for p in world.price_points(m, start, start + 86_399, 60)]
            expected[(platform.value, day)] = {
                "markets": pl.DataFrame({"id": [m.id for m in live]}),
                "events": pl.DataFrame({"id": sorted({m.event_id for m in live})}),
                "series": pl.DataFrame({"id": sorted({m.series_id for m in live})}),
                "trades": pl.DataFrame(
                    [{k: t[k] for k in ("market_id", "trade_id", "price", "size", "outcome")}
                     | {"timestamp": datetime.fromtimestamp(t["timestamp"], UTC)} for t in trades],
                    schema_overrides={"timestamp": pl.Datetime("us", "UTC")}),
                "price_history": pl.DataFrame(
                    [{"market_id": p["marketId"], "outcome_id": p["outcomeId"], "close": p["price"]["close"],
                      "timestamp": datetime.fromtimestamp(p["timestamp"], UTC)} for p in points],
                    schema_overrides={"timestamp": pl.Datetime("us", "UTC")}),
            }
    return expected


@pytest.fixture
def small_pages(monkeypatch: pytest.MonkeyPatch) -> None:
    for resource, size in SMALL_PAGES.items():
        monkeypatch.setitem(MAX_LIMIT, resource, size)
    for resource, size in SMALLER_PAGES.items():
        monkeypatch.setitem(LOWEST_DOCUMENTED_LIMIT, resource, size)


@cache
def _served_by(readings: str) -> SandboxApp:
    return SandboxApp(SandboxConfig(world=WORLD, readings=Readings.parse(readings)))


def _serve(monkeypatch: pytest.MonkeyPatch, readings: Readings) -> None:
    """The in-process sandbox of the pipeline's settings: the small world, in these readings."""
    monkeypatch.setenv("PMW_SANDBOX_READINGS", readings.label() if readings != Readings() else "")
    monkeypatch.setattr(plug, "sandbox_app", lambda seed, end, faults, readings, days: _served_by(readings))


@pytest.mark.parametrize("readings", READINGS, ids=[r.label() for r in READINGS])
def test_every_reading_lands_exactly_the_ground_truth(
    pipeline_env: Path, monkeypatch: pytest.MonkeyPatch, small_pages: None, readings: Readings,
    truth: dict[tuple[str, date], dict[str, pl.DataFrame]],
) -> None:
    _serve(monkeypatch, readings)
    lake = Lake(pipeline_env / "lake")
    for platform in PLATFORMS:
        for day in DAYS if readings in ALL_DAYS else DAYS[:1]:
            _land_passing_every_check(platform, day, through_dagster=readings in ALL_DAYS)
            expected = truth[(platform, day)]
            landed = {table: lake.read_partition(table, platform, day) for table in TABLES}
            assert all(frame is not None for frame in landed.values())
            for table in ("markets", "events", "series"):
                _assert_same(landed[table].select("id"), expected[table], "id")
            _assert_prices_keyed_by_outcome_id(landed["markets"])
            _assert_same(landed["trades"].select(expected["trades"].columns), expected["trades"], "trade_id")
            points = landed["price_history"].select("market_id", "outcome_id", pl.col("price").struct.field("close"),
                                                    "timestamp")
            _assert_same(points.select(expected["price_history"].columns), expected["price_history"],
                         "market_id", "outcome_id", "timestamp")
            market_ids = set(landed["markets"]["id"])
            for table in ("trades", "price_history"):
                assert set(landed[table]["market_id"]) <= market_ids, table
                assert landed[table].select(TABLES[table].primary_key).is_duplicated().sum() == 0, table
            _assert_served_ids_kept(landed, readings)


def _land_passing_every_check(platform: str, day: date, through_dagster: bool) -> None:
    if through_dagster:
        run = materialise(platform, day)
        assert run.success, [e.event_specific_data for e in run.all_events if e.is_step_failure]
        assert [e.check_name for e in run.get_asset_check_evaluations() if not e.passed] == []
    else:
        direct = land_directly(platform, day)
        assert direct.success, direct.failures() or direct.skipped
        assert [name for name, check in direct.checks.items() if not check.passed] == []


def _assert_same(landed: pl.DataFrame, expected: pl.DataFrame, *key: str) -> None:
    assert landed.height == expected.height
    only_landed = landed.join(expected, on=list(key), how="anti").head(3)
    assert landed.sort(key).equals(expected.sort(key)), (only_landed, expected.join(landed, on=list(key), how="anti"))


def _assert_prices_keyed_by_outcome_id(markets: pl.DataFrame) -> None:
    """Every outcome has its price, and every key of the maps "from outcome key" is an outcome's id."""
    outcome_ids = pl.col("outcomes").list.eval(pl.element().struct.field("id")).list.sort()
    for column in ("current_prices", "price_24h_changes", "price_7d_changes", "last_trades"):
        keys = pl.col(column).list.eval(pl.element().struct.field("key"))
        stray = markets.filter(keys.list.set_difference(outcome_ids).list.len() > 0)
        assert stray.height == 0, (column, stray.select("id", column, "outcomes").head(3))
    unpriced = markets.filter(pl.col("current_prices").list.eval(pl.element().struct.field("key")).list.sort()
                              != outcome_ids)
    assert unpriced.height == 0, unpriced.select("id", "current_prices", "outcomes").head(3)


def _assert_served_ids_kept(landed: dict[str, pl.DataFrame], readings: Readings) -> None:
    """Where the server put another id than the market's on a row, the row keeps it in `_served_market_id`."""
    platform_ids = dict(landed["markets"].select("id", "platform_id").iter_rows())
    for table in ("trades", "price_history"):
        served = landed[table].select("market_id", "_served_market_id").unique()
        if readings.row_market_id == "platform":
            expected = [platform_ids[m] if platform_ids[m] != m else None for m in served["market_id"]]
            assert served["_served_market_id"].to_list() == expected, table
        else:
            assert served["_served_market_id"].null_count() == served.height, table
