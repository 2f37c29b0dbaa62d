"""A catalogue far larger than a day's markets (a small world and an archive of 2,000 markets resolved before it,
pmw_sandbox/archive.py): a window's days, each a session of its own sharing the cache, newest first as the backfill
sensor asks them, list it once, find every market live on each day, and keep in memory only the markets a day of a
window ending then may hold."""

from __future__ import annotations

import math
from datetime import date, timedelta
from pathlib import Path

import pytest

from pipeline.engine.config import MAX_WINDOW_DAYS, Secret
from pipeline.engine.schema import MAX_LIMIT, Platform
from pipeline.engine.sources.http import HttpLayer
from pipeline.engine.sources.unified import CatalogueCache, UnifiedSource
from pmw_sandbox import DEFAULT_API_KEYS, SandboxApp, SandboxConfig, SandboxTransport, WorldConfig
from pmw_sandbox.transport import SANDBOX_BASE_URL
from tests.support.world import is_live_on

WORLD = WorldConfig(seed=3, end=date(2026, 11, 21), days=3, series_per_platform=3, events_per_series=2,
                    markets_per_event=3, trades_per_market_day=10, multivariate_markets=0, archived_markets=2_000)


@pytest.mark.parametrize("platform", ["polymarket", "kalshi"])
def test_a_window_lists_a_large_catalogue_once_finds_every_live_market_and_keeps_none_of_its_past(
        tmp_path: Path, platform: str) -> None:
    app = SandboxApp(SandboxConfig(world=WORLD))
    world, cache, layers = app.world, CatalogueCache(tmp_path / "catalogue", ttl_s=600), []
    own = world.markets(Platform(platform))

    def session() -> UnifiedSource:
        layers.append(HttpLayer(SANDBOX_BASE_URL, api_key=Secret(DEFAULT_API_KEYS[0]), transport=SandboxTransport(app),
                                max_attempts=1))
        return UnifiedSource(layers[-1], cache, "test")

    for day in sorted(world.days(), reverse=True):
        [page] = session().market_pages(platform, day)
        found = {record["id"] for record in page.records}
        live = {m.id for m in own if is_live_on(m, day, world.as_of)}
        assert live and live <= found, f"{platform} {day}: live markets lost: {sorted(live - found)}"
    [window] = session().market_pages(platform, WORLD.start_day, WORLD.end_day)
    assert {m.id for m in own if any(is_live_on(m, d, world.as_of) for d in world.days())} <= {
        record["id"] for record in window.records}

    listing_pages = sum(layer.stats.by_endpoint["/markets"] for layer in layers)
    assert listing_pages == math.ceil((len(own) + WORLD.archived_markets) / MAX_LIMIT["markets"])
    kept = {r["id"] for r in session().catalogue(platform).markets}  # as the cache holds it for every later run
    since = (WORLD.end_day - timedelta(days=MAX_WINDOW_DAYS - 1)).isoformat()  # the first listing's: the last day's
    archive = world.archive
    records = (archive.market_record(Platform(platform), i) for i in range(archive.markets))
    recent = {r["id"] for r in records if r["trading_end_at"] >= since}
    assert kept - {m.id for m in own} == recent, "of the archive, only markets ended on the window's horizon are kept"
    assert len(recent) < archive.markets / 5
