"""Kalshi's public API v2 as a source (PMW_SOURCE=direct); market data needs no key.

- markets live on the day: `/markets?mve_filter=exclude` narrowed by `min_close_ts`, cursor-paged at the
  largest page, each market nested under its event from `/events` (so that it carries its event's title,
  series and category, as Kalshi's own `with_nested_markets` shape does), then the unified path's liveness
  rule (`partition.live_on`);
- events and series: `/events` (cursor-paged) and `/series`, keeping the ids asked for;
- trades: `/markets/trades` per market with `min_ts`/`max_ts` of the day;
- price history: hourly candlesticks of each market over the day (`period_interval=60`).

Data older than `/historical/cutoff` is served only by the `/historical/...` endpoints: a day before the
cutoff also reads `/historical/markets` and `/historical/trades`, and a market whose candlesticks the live
tier does not know (404: settled before the cutoff) is asked at `/historical/markets/{ticker}/candlesticks`.
Kalshi allows about 20 reads a second.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, date, datetime
from typing import Any
from urllib.parse import quote

import polars as pl

from pipeline.engine.normalize.attribution import attribute
from pipeline.engine.normalize.frames import Normalised
from pipeline.engine.normalize.native import normalise_native
from pipeline.engine.sources.http import ApiError, HttpLayer, RequestStats
from pipeline.engine.sources.paging import KalshiCursor, SeenKeys, field_keys
from pipeline.engine.sources.partition import Coverage, MarketsDone, live_on
from pipeline.engine.sources.unified import day_bounds

PLATFORM = "kalshi"
KALSHI_URL = "https://api.elections.kalshi.com/trade-api/v2"
RATE_WINDOW_S, PER_WINDOW = 10.0, 200  # about 20 reads a second
MARKETS_PAGE, EVENTS_PAGE, TRADES_PAGE = 1_000, 200, 1_000  # the largest `limit` of each endpoint
HOURLY = 60


class KalshiSource:
    """A `PartitionSource` over Kalshi's public API v2."""

    def __init__(self, http: HttpLayer) -> None:
        self.http = http
        self._events: list[Any] | None = None
        self._cutoff: dict[str, int] | None = None

    def requests(self) -> RequestStats:
        return self.http.stats.snapshot()

    def coverage(self) -> Coverage:
        return Coverage()

    # -- catalogue ---------------------------------------------------------------------------------

    def markets(self, platform: str, day: date) -> Normalised:
        _check(platform)
        day_start, _ = day_bounds(day)
        query = {"mve_filter": "exclude", "min_close_ts": day_start + 1, "limit": MARKETS_PAGE}
        paths = ["/markets"] + (["/historical/markets"] if day_start < self.cutoff("market_settled_ts") else [])
        seen = SeenKeys(self.http.stats)  # a market in both tiers is kept once
        walks = [KalshiCursor(self.http, path, "markets", query, keys=field_keys("ticker"), seen=seen)
                 for path in paths]
        records = [m for walk in walks for m in walk.items()]
        by_event: dict[Any, list[Any]] = {}
        for market in records:
            by_event.setdefault(market.get("event_ticker") if isinstance(market, dict) else None, []).append(market)
        events = [{**e, "markets": by_event.pop(e.get("event_ticker"))} for e in self.events() if
                  isinstance(e, dict) and e.get("event_ticker") in by_event]
        nested = _normalised("events", {"events": events}, day, "markets")
        orphans = _normalised("markets", {"markets": [m for ms in by_event.values() for m in ms]}, day, "markets")
        rows = pl.concat([nested.rows, orphans.rows])
        return Normalised(rows.filter(live_on(day)), pl.concat([nested.rejects, orphans.rejects]))

    def members(self, platform: str, day: date, table: str, ids: set[str]) -> Normalised:
        _check(platform)
        if table == "events":
            listed = _normalised("events", {"events": self.events()}, day, "events")
        else:
            listed = _normalised("series", self.http.get_json("/series"), day, "series")
        return Normalised(listed.rows.filter(pl.col("id").is_in(sorted(ids))), listed.rejects)

    def events(self) -> list[Any]:
        """Every (non-multivariate) event, listed once a session."""
        if self._events is None:
            walk = KalshiCursor(self.http, "/events", "events", {"limit": EVENTS_PAGE}, keys=field_keys("event_ticker"))
            self._events = list(walk.items())
        return self._events

    def cutoff(self, name: str) -> int:
        """Unix seconds of one of `/historical/cutoff`'s moments (`market_settled_ts`, `trades_created_ts`)."""
        if self._cutoff is None:
            body = self.http.get_json("/historical/cutoff")
            try:
                self._cutoff = {key: _unix(value) for key, value in body.items()}
            except (AttributeError, TypeError, ValueError):
                raise ApiError(f"GET /historical/cutoff: unreadable answer {str(body)[:120]!r}") from None
        if name not in self._cutoff:
            raise ApiError(f"GET /historical/cutoff: no {name!r} in the answer")
        return self._cutoff[name]

    # -- trades and prices -------------------------------------------------------------------------

    def trades(self, platform: str, day: date, markets: pl.DataFrame) -> Iterator[Normalised | MarketsDone]:
        _check(platform)
        start, end = day_bounds(day)
        cutoff = self.cutoff("trades_created_ts")
        paths = (["/historical/trades"] if start < cutoff else []) + (["/markets/trades"] if end > cutoff else [])
        for market in markets.sort("id").iter_slices(1):
            ticker = market["id"][0]
            query = {"ticker": ticker, "min_ts": start, "max_ts": end - 1, "limit": TRADES_PAGE}
            seen = SeenKeys(self.http.stats)  # a trade in both tiers is kept once
            walks = [KalshiCursor(self.http, path, "trades", query, keys=field_keys("trade_id"), seen=seen)
                     for path in paths]
            records = [t for walk in walks for t in walk.items()]
            yield attribute(_normalised("trades", {"trades": records}, day, "trades"), market)[0]
            yield MarketsDone(ticker)

    def price_history(self, platform: str, day: date, markets: pl.DataFrame) -> Iterator[Normalised | MarketsDone]:
        _check(platform)
        start, end = day_bounds(day)
        query = {"start_ts": start, "end_ts": end, "period_interval": HOURLY}
        for ticker, series in markets.select("id", "series_id").sort("id").iter_rows():
            if series is None:
                raise ApiError(f"market {ticker}: its series is unknown, so its candlesticks cannot be asked for")
            market = quote(ticker, safe="")
            try:
                body = self.http.get_json(f"/series/{quote(series, safe='')}/markets/{market}/candlesticks", query)
            except ApiError as error:
                if error.status != 404:
                    raise
                # A market settled before the cutoff has moved to the historical tier.
                body = self.http.get_json(f"/historical/markets/{market}/candlesticks", query)
            yield _normalised("price_history", body, day, "price_history", market_id=ticker,
                              period_interval=str(HOURLY))
            yield MarketsDone(ticker)


def _check(platform: str) -> None:
    if platform != PLATFORM:
        raise ValueError(f"the Kalshi source cannot read platform {platform!r}")


def _unix(value: str) -> int:
    return int(datetime.fromisoformat(value.replace("Z", "+00:00")).astimezone(UTC).timestamp())


def _normalised(entity: str, body: Any, day: date, table: str, **context: str) -> Normalised:
    result = normalise_native(PLATFORM, entity, body, day=day, fetched_at=datetime.now(UTC), context=context)
    return result[table]
