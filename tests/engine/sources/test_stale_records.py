"""Skip only on evidence that cannot be stale: a record is the service's copy as of its `last_synced_at`, so a
market's trades go unasked only on a record synced after the window, and a market that liveness leaves out on a
record synced before the days ended is asked about again (`/markets/{id}`) and kept unless its own record leaves
it out for sure."""

from __future__ import annotations

from datetime import date, datetime
from pathlib import Path
from typing import Any

import httpx
import polars as pl

from pipeline.engine.normalize.partitions.unified import trade_markets
from pipeline.engine.sources.http import HttpLayer
from pipeline.engine.sources.liveness import partition_records, unsure_records
from pipeline.engine.sources.unified import CatalogueCache, UnifiedSource, day_bounds

DAY = date(2026, 11, 20)
BEFORE, DURING, AFTER = "2026-11-19T12:00:00Z", "2026-11-20T12:00:00Z", "2026-11-21T06:00:00Z"
STARTED = "2026-11-01T00:00:00Z"


def _moment(text: str) -> datetime:
    return datetime.fromisoformat(text)


def test_trades_go_unasked_only_on_a_record_synced_after_the_window() -> None:
    last_trade = pl.Struct({"key": pl.String(), "timestamp": pl.Datetime("us", "UTC")})
    markets = pl.DataFrame({
        "id": ["fresh-idle", "stale-idle", "fresh-trading", "never-traded", "synced-at-the-end"],
        "last_trades": [[{"key": "y", "timestamp": _moment(BEFORE)}], [{"key": "y", "timestamp": _moment(BEFORE)}],
                        [{"key": "y", "timestamp": _moment(DURING)}], None,
                        [{"key": "y", "timestamp": _moment(BEFORE)}]],
        "last_synced_at": [_moment(AFTER), _moment(DURING), _moment(AFTER), _moment(AFTER),
                           _moment("2026-11-21T00:00:00Z")],
    }, schema_overrides={"last_trades": pl.List(last_trade), "last_synced_at": pl.Datetime("us", "UTC")})
    assert trade_markets(markets, *day_bounds(DAY)) == ["fresh-trading", "never-traded", "stale-idle"]


def _record(market_id: str, end: str, synced: str | None, start: str = STARTED) -> dict[str, Any]:
    record = {"id": market_id, "trading_start_at": start, "trading_end_at": end}
    return record if synced is None else {**record, "last_synced_at": synced}


def test_a_market_is_left_out_only_on_evidence_that_cannot_be_stale() -> None:
    records = [
        _record("live", "2026-11-25T00:00:00Z", BEFORE),
        _record("ended-seen", "2026-11-19T06:00:00Z", BEFORE),  # synced after the end it gives: it ended
        _record("ended-synced-after", "2026-11-19T18:00:00Z", AFTER),
        _record("end-foreseen", "2026-11-19T18:00:00Z", BEFORE),  # synced before its end: maybe extended since
        _record("not-started", "2026-11-30T00:00:00Z", DURING, start="2026-11-21T12:00:00Z"),
        _record("not-started-seen", "2026-11-30T00:00:00Z", AFTER, start="2026-11-21T12:00:00Z"),
        _record("unsynced", "2026-11-19T18:00:00Z", None),
    ]
    ids = [r["id"] for r in unsure_records(records, DAY)]
    assert ids == ["end-foreseen", "not-started", "unsynced"]
    assert [r["id"] for r in partition_records(records, DAY)] == ["live", *ids]
    # A record without `last_synced_at` is as of its listing's `data_freshness` (the oldest its pages gave).
    assert [r["id"] for r in unsure_records(records, DAY, freshness=[AFTER, DURING])] == ["end-foreseen",
                                                                                          "not-started"]
    assert [r["id"] for r in unsure_records(records, DAY, freshness=[AFTER, BEFORE])] == ids


def test_a_market_left_out_on_a_stale_record_is_asked_about_again_once(tmp_path: Path) -> None:
    """`extended`: its own record gives a later end, and replaces the listed one (in the cache too); `gone`: its
    own record, synced after the end, leaves it out; `unknown`: 404, kept as listed."""
    listed = [_record("live", "2026-11-25T00:00:00Z", BEFORE), _record("extended", "2026-11-19T18:00:00Z", BEFORE),
              _record("gone", "2026-11-19T18:00:00Z", BEFORE), _record("unknown", "2026-11-19T18:00:00Z", BEFORE)]
    own = {"extended": {"data": _record("extended", "2026-11-23T00:00:00Z", AFTER)},
           "gone": {"pagination": {"has_more": False}, "markets": [_record("gone", "2026-11-19T18:00:00Z", AFTER)]}}
    asked: list[str] = []

    def serve(request: httpx.Request) -> httpx.Response:
        path = request.url.path.strip("/")
        asked.append(path)
        if path.startswith("markets/"):
            body = own.get(path.removeprefix("markets/"))
            missing = {"error": {"code": "NOT_FOUND", "message": "no such market"}}
            return httpx.Response(200, json=body) if body else httpx.Response(404, json=missing)
        records = listed if path == "markets" else []
        return httpx.Response(200, json={path: records, "pagination": {"has_more": False, "next_cursor": None},
                                         "meta": {"data_freshness": BEFORE}})

    def source() -> UnifiedSource:
        http = HttpLayer("http://api.test", transport=httpx.MockTransport(serve), max_attempts=1)
        return UnifiedSource(http, CatalogueCache(tmp_path / "catalogue", ttl_s=60), "api:test")

    first = source()
    for _ in range(2):  # the second call asks nothing again
        [page] = first.market_pages("polymarket", DAY)
        assert [r["id"] for r in page.records] == ["live", "extended", "unknown"]
        assert page.records[1] == own["extended"]["data"]
    assert sorted(p for p in asked if p.startswith("markets/")) == ["markets/extended", "markets/gone",
                                                                  "markets/unknown"]
    asked.clear()
    [page] = source().market_pages("polymarket", DAY)  # another process: the cached catalogue holds the own records
    assert [r["id"] for r in page.records] == ["live", "extended", "unknown"]
    assert asked == ["markets/unknown"]
