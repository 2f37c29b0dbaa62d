"""Issue 34, points 1 and 2: a market's scheduled end is no evidence that it stopped trading. A record that says
the market is open (Gamma `closed: false`, unified `status` open) keeps it live up to the record's sync, whatever
its end; a closed Gamma market ended at its `closedTime`, on whichever side of `endDate` it falls."""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Any

import httpx
import polars as pl

from pipeline.engine.normalize.native import normalize_native
from pipeline.engine.normalize.partitions.polymarket import PolymarketPartitions
from pipeline.engine.sources.http import HttpLayer
from pipeline.engine.sources.liveness import live_on, live_records, partition_records, surely_not_live, unsure_records
from pipeline.engine.sources.polymarket import PolymarketPages
from tests.support.native_cases import load

LATE_CLOSE = "polymarket/gamma_market_closed_after_end_date.json"  # endDate 2025-10-31 00:00, closed 11-01 06:28


def _markets(body: Any, fetched_at: datetime) -> pl.DataFrame:
    result = normalize_native("polymarket", "markets", body, day=fetched_at.date(), fetched_at=fetched_at)["markets"]
    assert result.rejects.is_empty(), result.rejects["reason"].to_list()
    return result.rows


def _live_days(markets: pl.DataFrame, days: list[date]) -> list[date]:
    return [day for day in days if markets.filter(live_on(day)).height]


def test_a_market_closed_after_its_end_date_traded_until_it_closed() -> None:
    """A recorded Gamma market (ccxt's capture, tests/fixtures/PROVENANCE.md) closed 30 hours after its
    `endDate`: its trading ended at `closedTime`, and it is live on the day it closed."""
    body, _ = load(LATE_CLOSE)
    markets = _markets(body, datetime(2026, 3, 9, 23, tzinfo=UTC))
    row = markets.row(0, named=True)
    assert row["trading_end_at"] == datetime(2025, 11, 1, 6, 28, 8, tzinfo=UTC)
    assert row["resolution_date"] == datetime(2025, 10, 31, tzinfo=UTC)  # the scheduled date, kept
    days = [date(2025, 10, 30), date(2025, 10, 31), date(2025, 11, 1), date(2025, 11, 2)]
    assert _live_days(markets, days) == days[:3]


def test_an_open_gamma_market_past_its_end_date_is_live_up_to_its_fetch() -> None:
    """The recorded open market (`closed: false`, `endDate` 2026-03-12 09:25), fetched weeks after its
    `endDate`: still open then, so live on every day up to the fetch, and not after it."""
    body, _ = load("polymarket/gamma_market.json")
    markets = _markets(body, datetime(2026, 4, 2, 8, tzinfo=UTC))
    assert markets["status"].to_list() == ["open"]
    assert markets["trading_end_at"].to_list() == [datetime(2026, 3, 12, 9, 25, tzinfo=UTC)]
    days = [date(2026, 3, 12), date(2026, 3, 13), date(2026, 4, 1), date(2026, 4, 2), date(2026, 4, 3)]
    assert _live_days(markets, days) == days[:4]
    closed = markets.with_columns(status=pl.lit("resolved"))
    assert _live_days(closed, days) == days[:1]


def _record(status: str, synced: str) -> dict[str, Any]:
    return {"id": "m", "status": status, "trading_start_at": "2026-11-01T00:00:00Z",
            "trading_end_at": "2026-11-10T12:00:00Z", "last_synced_at": synced}


def test_a_unified_record_open_past_its_trading_end_stays_live_on_evidence() -> None:
    """The unified API's `trading_end_at` is what the service was told: a record synced after the day that says
    open keeps the market in the day's partition; one synced before the day, after its end, that says open may
    since have closed or not: asked again, never left out for sure; one that says resolved is left out."""
    day = date(2026, 11, 20)
    after, before = "2026-11-21T03:00:00Z", "2026-11-15T00:00:00Z"
    assert live_records([_record("open", after)], day) == [_record("open", after)]
    assert live_records([_record("resolved", after)], day) == []
    assert live_records([_record("open", before)], day) == []
    assert unsure_records([_record("open", before)], day) == [_record("open", before)]
    assert partition_records([_record("open", before)], day) == [_record("open", before)]
    assert partition_records([_record("paused", before), _record("resolved", after)], day) == []
    moment = pl.Datetime("us", "UTC")
    frame = pl.DataFrame({"status": ["open"], "trading_start_at": [datetime(2026, 11, 1, tzinfo=UTC)],
                          "created_at": [None], "trading_end_at": [datetime(2026, 11, 10, 12, tzinfo=UTC)],
                          "resolved_at": [None], "last_synced_at": [datetime(2026, 11, 15, tzinfo=UTC)]},
                         schema_overrides={"created_at": moment, "resolved_at": moment})
    assert frame.select(surely_not_live(day)).item() is False


def _gamma(records: list[dict[str, Any]], asked: list[dict[str, str]]) -> HttpLayer:
    """A Gamma `/markets` over `records` that honours the filters the direct source sends."""

    def at(text: str) -> datetime:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))

    def answer(request: httpx.Request) -> httpx.Response:
        query = dict(request.url.params)
        asked.append(query)
        chosen = [r for r in records
                  if query.get("closed") in (None, str(r["closed"]).lower())
                  and ("end_date_min" not in query or at(r["endDate"]) >= at(query["end_date_min"]))
                  and ("end_date_max" not in query or at(r["endDate"]) <= at(query["end_date_max"]))
                  and ("start_date_max" not in query or at(r["startDate"]) <= at(query["start_date_max"]))]
        return httpx.Response(200, json=chosen[int(query.get("offset", 0)):])

    return HttpLayer("http://gamma.test", transport=httpx.MockTransport(answer), max_attempts=1)


def test_the_direct_listing_finds_a_market_on_the_day_it_closed_after_its_end_date() -> None:
    """The recorded late close (`endDate` 2025-10-31 00:00, `closedTime` 2025-11-01 06:28): Gamma's `endDate`
    filter alone would not list it on 2025-11-01, the day it last traded; the open recorded market, past its
    `endDate`, is listed too. Each listing is one request here."""
    late, _ = load(LATE_CLOSE)
    still_open = {**load("polymarket/gamma_market.json")[0], "startDate": "2025-10-01T00:00:00Z",
                  "endDate": "2025-10-20T00:00:00Z"}
    asked: list[dict[str, str]] = []
    unused = HttpLayer("http://unused.test", transport=httpx.MockTransport(lambda _: httpx.Response(500)))
    source = PolymarketPartitions(PolymarketPages(gamma=_gamma([late, still_open], asked), clob=unused, data=unused))
    listed = source.markets(date(2025, 11, 1))
    assert sorted(listed.rows["id"]) == sorted([late["id"], still_open["id"]])
    assert len(asked) == 3
    assert sorted(source.markets(date(2025, 11, 2)).rows["id"]) == [still_open["id"]]
