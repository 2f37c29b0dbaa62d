"""A window of days swept once: its requests against the fewest the API allows, and the days it lands against
what runs of each day alone land, table by table."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import replace
from datetime import date, timedelta
from functools import cache
from pathlib import Path

import polars as pl
import pytest

from benchmarks.request_bound import fewest_requests
from pipeline.engine.config import DIRECT_SANDBOX, Settings
from pipeline.engine.garbage_collection import cyclic_gc_per_chunk
from pipeline.engine.lake.store import Lake
from pipeline.engine.lake.stream import land_stream
from pipeline.engine.normalize.partitions.protocol import WindowSource
from pipeline.engine.normalize.partitions.sessions import open_source
from pipeline.engine.normalized import MarketsDone, Normalized
from pipeline.engine.schema import Platform, Source
from pipeline.engine.sources.coverage import Coverage
from pipeline.engine.sources.liveness import live_on
from pipeline.engine.spool.window import Window, WindowSweeps, windows_of
from pmw_sandbox import SandboxApp, SandboxConfig
from pmw_sandbox.plug import InProcessSandbox
from pmw_sandbox.readings import Readings
from pmw_sandbox.world import World
from tests.support.world import PIPELINE_WORLD

# The smallest world that still pages: a few dozen markets a platform, their trades over a week more than a
# page, 30 days of history for the longest window.
WINDOW_WORLD = replace(PIPELINE_WORLD, days=30, series_per_platform=2, events_per_series=2, markets_per_event=4,
                       multivariate_markets=1, trades_per_market_day=100)
END = WINDOW_WORLD.end_day
PLATFORMS = ("polymarket", "kalshi")
DEFAULT_READINGS = Readings()
# The readings of the spec a window's sweep meets otherwise than a day's: trades oldest first (paging stops past
# the window's end), points interleaved by time, labelled by their period's end, with no market id on them.
WINDOW_READINGS = Readings(trades_order="oldest_first", price_points_order="by_time", row_market_id="absent",
                           price_label="period_end")


@cache
def _app(readings: Readings = DEFAULT_READINGS) -> SandboxApp:
    return SandboxApp(SandboxConfig(world=WINDOW_WORLD, readings=readings))


def _settings(data_dir: Path, source: Source = Source.SANDBOX) -> Settings:
    """The in-process sandbox of WINDOW_WORLD, as the unified API or (`Source.DIRECT`) as the platforms' APIs."""
    return replace(Settings(), source=source, direct_url=DIRECT_SANDBOX if source == Source.DIRECT else None,
                   data_dir=data_dir, sandbox_seed=WINDOW_WORLD.seed, sandbox_end=END, sandbox_days=WINDOW_WORLD.days,
                   catalogue_ttl_s=0, max_backoff_s=0.01)


def _days(first: date, last: date) -> list[date]:
    return [first + timedelta(days=n) for n in range((last - first).days + 1)]


def _markets(listed: pl.DataFrame, day: date) -> pl.DataFrame:
    """The markets partition of the day, as the `markets` asset lands it, from the markets of a window."""
    return listed.filter(live_on(day)).unique("id", keep="first", maintain_order=True)


def _land(lake: Lake, table: str, platform: str, day: date, stream: Iterator[Normalized | MarketsDone],
          markets: pl.DataFrame) -> None:
    landed = land_stream(lake, table, platform, day, stream, market_ids=frozenset(markets["id"].to_list()))
    assert all(o.passed for o in landed.outcomes), [o for o in landed.outcomes if not o.passed]


def _land_window(data_dir: Path, platform: str, window: Window, land: bool = True,
                 source_kind: Source = Source.SANDBOX, readings: Readings = DEFAULT_READINGS) -> Counter[str]:
    """Land the window's trades and price history from one sweep (or, unless `land`, only read them as they
    would land); the requests it made, catalogue included."""
    settings = _settings(data_dir, source_kind)
    lake, sweeps = Lake(settings.lake_dir), WindowSweeps(settings.windows_dir)
    with open_source(settings, platform, InProcessSandbox(_app(readings))) as source:
        assert isinstance(source, WindowSource)
        listed = source.window_markets(window.first, window.last).rows
        for day in window.days:
            markets = _markets(listed, day)
            for table in ("trades", "price_history"):
                stream = sweeps.day_stream(source, table, window, day, markets, Coverage())
                if land:
                    _land(lake, table, platform, day, stream, markets)
                else:
                    with cyclic_gc_per_chunk():  # as landing does
                        assert sum(item.rows.height for item in stream if isinstance(item, Normalized)) >= 0
        return Counter(source.requests().by_endpoint)


def _land_days_alone(data_dir: Path, platform: str, days: list[date], source_kind: Source,
                     readings: Readings) -> Counter[str]:
    """Land each day's trades and price history alone; the requests it made."""
    settings = _settings(data_dir, source_kind)
    lake = Lake(settings.lake_dir)
    with open_source(settings, platform, InProcessSandbox(_app(readings))) as source:
        assert isinstance(source, WindowSource)
        listed = source.window_markets(days[0], days[-1]).rows
        for day in days:
            markets = _markets(listed, day)
            _land(lake, "trades", platform, day, source.trades(day, markets), markets)
            _land(lake, "price_history", platform, day, source.price_history(day, markets), markets)
        return Counter(source.requests().by_endpoint)


@pytest.fixture(scope="module")
def world() -> World:
    return World(WINDOW_WORLD)


@pytest.mark.parametrize("days", [1, pytest.param(3, id="3-the-nightly-run"), 7, 30])
def test_a_window_costs_at_most_a_tenth_more_than_the_fewest_requests(tmp_path: Path, world: World,
                                                                      days: int) -> None:
    first = END - timedelta(days=days - 1)
    for platform in PLATFORMS:
        made = _land_window(tmp_path / platform, platform, Window(first, END, "test"), land=False)
        bound = fewest_requests(world, Platform(platform), first, last=END)
        assert sum(made.values()) <= 1.1 * sum(bound.values()), (platform, made, bound)
        for endpoint, fewest in bound.items():
            assert made[endpoint] >= fewest, f"{platform} {endpoint}: {made[endpoint]} requests, fewer than {fewest}"


@pytest.mark.slow
@pytest.mark.parametrize(("source_kind", "length", "readings", "platforms"), [
    (Source.SANDBOX, 7, DEFAULT_READINGS, ("polymarket",)),
    (Source.SANDBOX, 2, WINDOW_READINGS, PLATFORMS),
    (Source.DIRECT, 2, DEFAULT_READINGS, PLATFORMS),
], ids=["unified-week", "unified-other-readings", "direct"])
def test_a_window_lands_what_its_days_alone_land(tmp_path: Path, source_kind: Source, length: int,
                                                 readings: Readings, platforms: tuple[str, ...]) -> None:
    days = _days(END - timedelta(days=length - 1), END)
    for platform in platforms:
        window = Window(days[0], days[-1], "test")
        swept = _land_window(tmp_path / "window", platform, window, True, source_kind, readings)
        alone = _land_days_alone(tmp_path / "alone", platform, days, source_kind, readings)
        assert sum(swept.values()) < sum(alone.values()), (platform, swept, alone)
    swept_lake, alone_lake = Lake(tmp_path / "window" / "lake"), Lake(tmp_path / "alone" / "lake")
    for table in ("trades", "price_history"):
        for platform in platforms:
            landed = 0
            for day in days:
                window_rows = swept_lake.read_partition(table, platform, day)
                day_rows = alone_lake.read_partition(table, platform, day)
                assert window_rows is not None and day_rows is not None
                assert window_rows.drop("_fetched_at").equals(day_rows.drop("_fetched_at")), (table, platform, day)
                landed += day_rows.height
            assert landed, (table, platform)
    assert not any((tmp_path / "window" / "windows").glob("*/*/manifest.json")), "a served spool is left behind"


def test_days_group_into_windows_of_consecutive_days() -> None:
    days = [date(2026, 11, d) for d in (3, 1, 2, 5, 6, 9)]
    assert [(w.first.day, w.last.day) for w in windows_of(days, "t")] == [(1, 3), (5, 6), (9, 9)]
    assert [(w.first.day, w.last.day) for w in windows_of(days, "t", max_days=2)] == [(1, 2), (3, 3), (5, 6), (9, 9)]
    window = Window(date(2026, 11, 1), date(2026, 11, 3), "backfill-1")
    assert Window.parse(window.tag) == window
    with pytest.raises(ValueError, match="not a window tag"):
        Window.parse("yesterday")
