"""Bounds from evidence (issue 39, point 10): a server that sends new items on every page and always says there are
more is stopped at a bound derived from what the service said (its `pagination.total`), or from what the previous
listing held, long before PMW_MAX_PAGES, in one line naming the endpoint and the bound. The server is the sandbox on
127.0.0.1 behind a fault that renames every page's items (tests/support/hostile.py)."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from pipeline.engine.config import Secret
from pipeline.engine.sources.http import ApiError, HttpLayer
from pipeline.engine.sources.unified import CatalogueCache, UnifiedSource
from pmw_sandbox import SandboxApp, SandboxConfig, WorldConfig
from tests.support.hostile import Answer, HostileServer, Request, no_fault

WORLD = WorldConfig(seed=5, end=date(2026, 11, 20), days=2, series_per_platform=1, events_per_series=2,
                    markets_per_event=2, trades_per_market_day=5)
KEY = "sk-test-paging-bounds"


class EndlessMarkets:
    """Every page of /markets: the first page's markets under new ids and a new cursor, for ever (the other lists
    as served); without `totals`, no `pagination.total`."""

    def __init__(self, totals: bool = True) -> None:
        self.totals = totals
        self.first: Answer | None = None

    def __call__(self, request: Request, answer: Answer) -> Answer:
        if request.path != "/markets":
            return answer
        if "cursor" not in request.query:
            self.first = answer
        assert self.first is not None
        body = self.first.json()
        body["markets"] = [{**m, "id": f"{m['id']}-{request.number}"} for m in body["markets"]]
        body["pagination"] |= {"has_more": True, "next_cursor": f"page-{request.number}"}
        if not self.totals:
            body["pagination"].pop("total", None)
        return self.first.with_json(body)


def _list(server: HostileServer, cache: CatalogueCache | None = None) -> UnifiedSource:
    source = UnifiedSource(HttpLayer(server.url, api_key=Secret(KEY), max_attempts=1), cache, "api:test")
    source.catalogue("kalshi")
    return source


def test_new_items_on_every_page_stop_at_twice_the_pages_the_listing_counts() -> None:
    with (HostileServer(SandboxApp(SandboxConfig(world=WORLD, api_keys=(KEY,))), EndlessMarkets()) as server,
          pytest.raises(ApiError) as raised):
        _list(server)
    said = str(raised.value)
    assert said.startswith("GET /markets: 52 pages and the server still says there are more: stopped at 52 pages "
                           "that brought new items, twice the 1 page of its pagination.total="), said
    assert "\n" not in said and server.requests < 60


def test_without_a_count_the_previous_listing_bounds_the_pages(tmp_path: Path) -> None:
    cache = CatalogueCache(tmp_path / "cache", ttl_s=0.001)
    with HostileServer(SandboxApp(SandboxConfig(world=WORLD, api_keys=(KEY,))), no_fault) as server:
        _list(server, cache)  # a good listing, kept (its TTL passes at once)
        server.fault, asked = EndlessMarkets(totals=False), server.requests
        with pytest.raises(ApiError) as raised:
            _list(server, cache)
    said = str(raised.value)
    assert said.startswith("GET /markets: 52 pages and the server still says there are more: stopped at 52 pages "
                           "that brought new items, twice the 1 page of the "), said
    assert server.requests - asked < 60
