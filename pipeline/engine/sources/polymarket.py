"""Polymarket's public APIs as a source (PMW_SOURCE=direct): Gamma, the CLOB and the Data API; no key needed.

- markets live on the day: Gamma `/markets` narrowed by `end_date_min`/`start_date_max`, offset-paged at
  Gamma's largest page, then the same liveness rule as the unified path (`partition.live_on`);
- events and series: Gamma `/events` and `/series` by id, `MEMBERS_PER_REQUEST` ids a request;
- trades: Data API `/trades` by condition id, newest first, offset-paged until a page reaches back before
  the day. The Data API refuses offsets past about `DATA_API_OFFSET_CAP`: a market whose day lies deeper
  stops there and is reported in the partition's coverage (incomplete, with the oldest trade reached);
- price history: CLOB `/prices-history` of each outcome token over the day, hourly.

Each host has its own HTTP layer and request budget (sliding windows of 10 s, from spec/platforms.md).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from itertools import repeat
from typing import Any

import polars as pl

from pipeline.engine.normalize.attribution import attribute
from pipeline.engine.normalize.frames import Normalised
from pipeline.engine.normalize.native import normalise_native
from pipeline.engine.sources.http import HttpLayer, RequestStats
from pipeline.engine.sources.paging import DataApiOffset, GammaOffset, content_keys, field_keys
from pipeline.engine.sources.partition import Coverage, MarketsDone, combined, live_on
from pipeline.engine.sources.unified import day_bounds

PLATFORM = "polymarket"
GAMMA_URL = "https://gamma-api.polymarket.com"
CLOB_URL = "https://clob.polymarket.com"
DATA_URL = "https://data-api.polymarket.com"
RATE_WINDOW_S = 10.0
# Requests per 10 s: Gamma /markets 300 (its /events 500: one budget at the lower), Data /trades 200, CLOB
# /prices-history 1,000.
GAMMA_PER_WINDOW, DATA_PER_WINDOW, CLOB_PER_WINDOW = 300, 200, 1_000
GAMMA_PAGE = 500  # Gamma's largest `limit`
GAMMA_MAX_OFFSET = 10_000  # deeper offset paging on Gamma is refused
MEMBERS_PER_REQUEST = 50  # ids in one Gamma request (`id=..&id=..`), keeping the URL short
DATA_PAGE = 500
DATA_API_OFFSET_CAP = 3_000  # the Data API refuses offsets past about this
HOURLY = 60


class PolymarketSource:
    """A `PartitionSource` over Gamma, the CLOB and the Data API."""

    def __init__(self, gamma: HttpLayer, clob: HttpLayer, data: HttpLayer) -> None:
        self.gamma, self.clob, self.data = gamma, clob, data
        self._coverage = Coverage()

    def requests(self) -> RequestStats:
        return combined([layer.stats for layer in (self.gamma, self.clob, self.data)])

    def coverage(self) -> Coverage:
        return self._coverage

    # -- catalogue ---------------------------------------------------------------------------------

    def markets(self, platform: str, day: date) -> Normalised:
        _check(platform)
        start = datetime.combine(day, datetime.min.time(), UTC)
        window = {"end_date_min": _iso(start), "start_date_max": _iso(start + timedelta(days=1))}
        walk = GammaOffset(self.gamma, "/markets", window, page_size=GAMMA_PAGE, max_offset=GAMMA_MAX_OFFSET,
                           keys=field_keys("id"))
        listed = _concat([_normalised(PLATFORM, "markets", page.body, day) for page in walk.pages()])
        return Normalised(listed.rows.filter(live_on(day)), listed.rejects)

    def members(self, platform: str, day: date, table: str, ids: set[str]) -> Normalised:
        _check(platform)
        wanted = sorted(ids)
        pages = []
        for i in range(0, len(wanted), MEMBERS_PER_REQUEST):
            query = [("id", one) for one in wanted[i : i + MEMBERS_PER_REQUEST]] + [("limit", GAMMA_PAGE)]
            pages.append(_normalised(PLATFORM, table, self.gamma.get_json(f"/{table}", query), day))
        listed = _concat(pages) if pages else _empty(table, day)
        return Normalised(listed.rows.unique("id", keep="first", maintain_order=True), listed.rejects)

    # -- trades and prices -------------------------------------------------------------------------

    def trades(self, platform: str, day: date, markets: pl.DataFrame) -> Iterator[Normalised | MarketsDone]:
        _check(platform)
        day_start, _ = day_bounds(day)
        for market in markets.sort("id").iter_slices(1):
            market_id, condition_id = market["id"][0], market["platform_id"][0]
            records = self._market_trades(market_id, condition_id, day_start)
            yield attribute(_normalised(PLATFORM, "trades", records, day, market_id=market_id), market)[0]
            yield MarketsDone(market_id)

    def _market_trades(self, market_id: str, condition_id: str, day_start: int) -> Any:
        """The market's trades, newest first, back to the day's start or as deep as the Data API pages, as one
        body (a bare array, or the newer `{data, pagination}`)."""
        query = {"market": condition_id, "takerOnly": "false"}
        walk = DataApiOffset(self.data, "/trades", query, page_size=DATA_PAGE, cap=DATA_API_OFFSET_CAP,
                             keys=content_keys, stop=lambda trades: _oldest(trades) < day_start)
        pages = list(walk.pages())
        records = [trade for page in pages for trade in page.items]
        if walk.capped and records:
            self._coverage.incomplete[market_id] = datetime.fromtimestamp(_oldest(records), UTC)
        key = pages[-1].items_key if pages else None
        return records if key is None else {**pages[-1].body, key: records}

    def price_history(self, platform: str, day: date, markets: pl.DataFrame) -> Iterator[Normalised | MarketsDone]:
        _check(platform)
        start, end = day_bounds(day)
        outcomes = markets.select("id", pl.col("outcomes").list.eval(pl.element().struct.field("id"))).sort("id")
        for market_id, tokens in outcomes.iter_rows():
            pages = [
                _normalised(
                    PLATFORM, "price_history",
                    self.clob.get_json("/prices-history", {
                        "market": token, "startTs": start, "endTs": end - 1, "fidelity": HOURLY}),
                    day, market_id=market_id, outcome_id=token,
                )
                for token in tokens or []
            ]
            if pages:
                yield _concat(pages)
            yield MarketsDone(market_id)


def _check(platform: str) -> None:
    if platform != PLATFORM:
        raise ValueError(f"the Polymarket source cannot read platform {platform!r}")


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _oldest(trades: list[Any]) -> float:
    """The oldest timestamp on a list of Data API trades (unreadable ones ignored; infinity without any)."""
    if set(map(type, trades)) <= {dict}:
        times = list(map(dict.get, trades, repeat("timestamp")))
        if set(map(type, times)) <= {int, float}:  # the usual case: no Python bytecode per trade
            return min(times, default=float("inf"))
    numbers = [t.get("timestamp") for t in trades if isinstance(t, dict)]
    return min((t for t in numbers if isinstance(t, int | float)), default=float("inf"))


def _normalised(platform: str, entity: str, body: Any, day: date, **context: str) -> Normalised:
    result = normalise_native(platform, entity, body, day=day, fetched_at=datetime.now(UTC), context=context)
    return result[entity]


def _concat(parts: list[Normalised]) -> Normalised:
    return Normalised(pl.concat([p.rows for p in parts]), pl.concat([p.rejects for p in parts]))


def _empty(table: str, day: date) -> Normalised:
    return _normalised(PLATFORM, table, [], day)
