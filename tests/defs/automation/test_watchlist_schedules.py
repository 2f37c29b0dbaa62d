"""The watch lists' schedules: the cadence as a cron, one round per platform with books, the traders' day."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, time
from pathlib import Path

import pytest

from pipeline.defs.automation.schedule import daily_cron
from pipeline.defs.orderbooks.schedule import cron_every, platforms_with_books, round_requests
from pipeline.defs.profiles.schedule import traders_at, traders_requests
from pipeline.engine.config import Settings
from pipeline.engine.schema import Platform


def _settings(tmp_path: Path, variable: str, text: str) -> Settings:
    path = tmp_path / "list.csv"
    path.write_text(text)
    return Settings.from_env({variable: str(path)})


@pytest.mark.parametrize(("minutes", "cron"), [(1, "* * * * *"), (15, "*/15 * * * *"), (60, "0 * * * *"),
                                               (180, "0 */3 * * *"), (1440, "0 0 * * *")])
def test_the_cadence_becomes_a_cron(minutes: int, cron: str) -> None:
    assert cron_every(minutes) == cron


def test_a_tick_asks_one_round_per_platform_with_books_and_names_the_round(tmp_path: Path) -> None:
    settings = _settings(tmp_path, "PMW_ORDERBOOK_WATCHLIST", "manifold,Mz3kQ8vXe1\n")
    assert platforms_with_books(settings) == [Platform.POLYMARKET, Platform.KALSHI, Platform.MANIFOLD]
    assert platforms_with_books(replace(settings, orderbook_top_n=0)) == [Platform.MANIFOLD]
    requests = round_requests(datetime(2026, 11, 21, 13, 0, 7, tzinfo=UTC), settings)
    assert [r.run_key for r in requests] == [f"orderbook_round:2026-11-21T13:00:00+00:00:{p}"
                                             for p in ("polymarket", "kalshi", "manifold")]
    assert {r.tags["pmw/snapshot_at"] for r in requests} == {"2026-11-21T13:00:00+00:00"}
    assert requests[2].partition_key == "2026-11-21|manifold"


def test_the_traders_tick_asks_yesterday_of_each_watched_platform(tmp_path: Path) -> None:
    settings = _settings(tmp_path, "PMW_TRADER_WATCHLIST", "kalshi,trader3\nkalshi,trader7\n")
    requests = traders_requests(datetime(2026, 11, 22, 0, 45, tzinfo=UTC), settings)
    assert [(r.partition_key, r.run_key) for r in requests] == [("2026-11-21|kalshi",
                                                                 "traders_daily:2026-11-21:kalshi")]


@pytest.mark.parametrize(("daily_at", "traders"), [("00:30", time(0, 45)), ("06:05", time(6, 20)),
                                                   ("23:50", time(0, 5))])
def test_the_traders_tick_follows_the_daily_one_by_a_quarter_of_an_hour(daily_at: str, traders: time) -> None:
    assert traders_at(Settings.from_env({"PMW_DAILY_AT": daily_at}).automation.daily_at) == traders
    assert daily_cron(traders) == f"{traders.minute} {traders.hour} * * *"
