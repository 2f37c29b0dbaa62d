"""Two failures seen against an independently written server, reproduced with answers rewritten as it wrote
them: price points interleaved by time, and the platform's id on trades and price points.

The rewriting sits between the pipeline and the sandbox (an httpx transport), so these tests do not rely on
the sandbox's own readings (tests/defs/ingestion/test_readings.py covers those).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, date, datetime, time
from pathlib import Path
from typing import Any

import httpx
import orjson
import polars as pl
import pytest

from pipeline.engine.config import Secret
from pipeline.engine.lake.store import Lake
from pipeline.engine.lake.stream import land_stream
from pipeline.engine.normalize.partitions.unified import UnifiedPartitions
from pipeline.engine.sources.http import HttpLayer
from pipeline.engine.sources.unified import UnifiedSource
from pmw_sandbox.app import DEFAULT_API_KEYS, SandboxApp, SandboxConfig
from pmw_sandbox.catalogue import WorldConfig
from pmw_sandbox.transport import SANDBOX_BASE_URL, SandboxTransport
from pmw_sandbox.world import World
from tests.support.world import is_live_on

WORLD = WorldConfig(seed=5, end=date(2026, 11, 21), days=2, series_per_platform=2, events_per_series=2,
                    markets_per_event=4, trades_per_market_day=30, multivariate_markets=1)
DAY = WORLD.end_day
Rewrite = Callable[[str, dict[str, Any]], None]


class Rewriting(httpx.BaseTransport):
    """The sandbox's answers, each JSON body passed through `rewrite(path, body)` first."""

    def __init__(self, app: SandboxApp, rewrite: Rewrite) -> None:
        self.inner, self.rewrite = SandboxTransport(app), rewrite

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        answer = self.inner.handle_request(request)
        body = orjson.loads(answer.read())
        self.rewrite(request.url.path, body)
        return httpx.Response(answer.status_code, headers={"content-type": "application/json"},
                              content=orjson.dumps(body), request=request)


def _platform_ids(world: World) -> dict[str, str]:
    return {m.id: m.platform_id for p in world.catalogues for m in world.markets(p)}


def _points_by_time(path: str, body: dict[str, Any]) -> None:
    if path == "/price-history":
        body["data"].sort(key=lambda point: point["timestamp"])


def _platform_id_on_rows(world: World) -> Rewrite:
    platform_ids = _platform_ids(world)

    def rewrite(path: str, body: dict[str, Any]) -> None:
        for row in body.get("trades", []) if path == "/trades" else []:
            row["market_id"] = platform_ids[row["market_id"]]
        for row in body.get("data", []) if path == "/price-history" else []:
            row["marketId"] = platform_ids[row["marketId"]]

    return rewrite


def _land(tmp_path: Path, platform: str, rewrite: Rewrite) -> dict[str, pl.DataFrame]:
    app = SandboxApp(SandboxConfig(world=WORLD))
    http = HttpLayer(SANDBOX_BASE_URL, api_key=Secret(DEFAULT_API_KEYS[0]), transport=Rewriting(app, rewrite))
    partitions = UnifiedPartitions(UnifiedSource(http, None, "independent"), platform, "api")
    markets = partitions.markets(DAY).rows
    lake = Lake(tmp_path)
    ids = frozenset(markets["id"].to_list())
    for table, stream in (("trades", partitions.trades), ("price_history", partitions.price_history)):
        land_stream(lake, table, platform, DAY, stream(DAY, markets), market_ids=ids)
    landed = {table: lake.read_partition(table, platform, DAY) for table in ("trades", "price_history")}
    return {"markets": markets, **{t: f for t, f in landed.items() if f is not None}}


def _world_counts(platform: str) -> dict[str, int]:
    world = World(WORLD)
    start = int(datetime.combine(DAY, time(), UTC).timestamp())
    live = [m for p in world.catalogues if p == platform for m in world.markets(p) if is_live_on(m, DAY, world.as_of)]
    taker_times = [world.activity(m).ts[world.activity(m).taker] for m in live]  # asked taker-only: a match is a row
    trades = sum(int(((times >= start) & (times < start + 86_400)).sum()) for times in taker_times)
    points = sum(len(world.price_points(m, start, start + 86_399, 60)) for m in live)
    return {"trades": trades, "price_history": points}


@pytest.fixture(params=["polymarket", "kalshi"])
def platform(request: pytest.FixtureRequest) -> Iterator[str]:
    yield request.param


def test_price_points_interleaved_by_time_land_whole(tmp_path: Path, platform: str) -> None:
    landed = _land(tmp_path, platform, _points_by_time)
    assert landed["price_history"].height == _world_counts(platform)["price_history"] > 0


def test_rows_carrying_the_platforms_id_join_the_market_asked_for(tmp_path: Path) -> None:
    world = World(WORLD)
    landed = _land(tmp_path, "polymarket", _platform_id_on_rows(world))
    market_ids = set(landed["markets"]["id"])
    counts = _world_counts("polymarket")
    platform_ids = _platform_ids(world)
    for table in ("trades", "price_history"):
        rows = landed[table]
        assert rows.height == counts[table] > 0, table
        assert set(rows["market_id"]) <= market_ids, table  # every row joins a market of its partition
        served = [platform_ids[market] for market in rows["market_id"]]
        assert rows["_served_market_id"].to_list() == served, table  # what the server said, kept
