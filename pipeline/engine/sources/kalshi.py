"""Kalshi's public API v2 as a source (PMW_SOURCE=direct); market data needs no key.

`KalshiPages` reads markets live on the day, events, series, trades and hourly candlesticks as raw pages (the
`/historical/...` tier for days before the cutoff); `pipeline.engine.normalize.partitions.kalshi` normalizes them.
Which endpoints, and why they suffice, in docs/design.md, "Kalshi as a source".
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, date, datetime
from typing import Any
from urllib.parse import quote

import polars as pl

from pipeline.engine.raw_pages import RawPage
from pipeline.engine.sources.http import ApiError, HttpLayer
from pipeline.engine.sources.identities import SeenKeys, field_keys
from pipeline.engine.sources.paging import KalshiCursor, Page
from pipeline.engine.sources.unified import day_bounds

PLATFORM = "kalshi"
KALSHI_URL = "https://api.elections.kalshi.com/trade-api/v2"
RATE_WINDOW_S, PER_WINDOW = 10.0, 200  # about 20 reads a second
MARKETS_PAGE, EVENTS_PAGE, TRADES_PAGE = 1_000, 200, 1_000  # the largest `limit` of each endpoint
BATCH_TICKERS, BATCH_CANDLES = 100, 10_000  # `/markets/candlesticks`: tickers and candles a request at most
HOURLY = 60
_SETTLED = ("resolved", "cancelled")
_Tiered = tuple[str, str | None, bool]  # a market's id, its series, whether the historical tier holds it


class KalshiPages:
    """Kalshi's answers for a partition, as raw pages."""

    def __init__(self, http: HttpLayer) -> None:
        self.http = http
        self._events: list[tuple[Page, datetime]] | None = None
        self._cutoff: dict[str, int] | None = None

    def market_pages(self, day: date) -> Iterator[RawPage]:
        """Markets that may be live on the day (not closed before it starts), from the historical tier too for
        a day before its cutoff; each market once."""
        day_start, _ = day_bounds(day)
        query = {"mve_filter": "exclude", "min_close_ts": day_start + 1, "limit": MARKETS_PAGE}
        paths = ["/markets"] + (["/historical/markets"] if day_start < self.cutoff("market_settled_ts") else [])
        seen = SeenKeys(self.http.stats)
        for path in paths:
            for page in KalshiCursor(self.http, path, "markets", query, keys=field_keys("ticker"), seen=seen).pages():
                yield _raw("markets", day, page.body, page.items_key, conflicting=page.conflicting)

    def event_pages(self, day: date) -> list[RawPage]:
        """Every (non-multivariate) event, listed once a session."""
        if self._events is None:
            walk = KalshiCursor(self.http, "/events", "events", {"limit": EVENTS_PAGE}, keys=field_keys("event_ticker"))
            self._events = [(page, datetime.now(UTC)) for page in walk.pages()]
        return [_raw("events", day, page.body, page.items_key, fetched_at=at, conflicting=page.conflicting)
                for page, at in self._events]

    def series_pages(self, day: date) -> Iterator[RawPage]:
        yield _raw("series", day, self.http.get_json("/series"), "series")

    def trade_pages(self, day: date, tickers: list[str], last: date | None = None) -> Iterator[RawPage]:
        """Each market's trades of the day (or of the days up to `last`) in turn, from the historical tier for
        the part before its cutoff."""
        start, end = day_bounds(day)[0], day_bounds(last or day)[1]
        cutoff = self.cutoff("trades_created_ts")
        paths = (["/historical/trades"] if start < cutoff else []) + (["/markets/trades"] if end > cutoff else [])
        for ticker in tickers:
            query = {"ticker": ticker, "min_ts": start, "max_ts": end - 1, "limit": TRADES_PAGE}
            seen = SeenKeys(self.http.stats)
            for path in paths:
                walk = KalshiCursor(self.http, path, "trades", query, keys=field_keys("trade_id"), seen=seen)
                for page in walk.pages():
                    yield _raw("trades", day, page.body, page.items_key, asked_for=(ticker,),
                               conflicting=page.conflicting)

    def candlestick_pages(self, day: date, markets: pl.DataFrame, last: date | None = None) -> Iterator[RawPage]:
        """Each market's hourly candlesticks over the day (or the days up to `last`), in id order (`markets`: rows
        of the markets table): those the live tier serves a batch at a time (as many markets as its candle cap
        allows over the span), and one by one those settled before the cutoff and those a batch answer leaves
        out (all of a batch refused with 404)."""
        start, end = day_bounds(day)[0], day_bounds(last or day)[1]
        query = {"start_ts": start, "end_ts": end, "period_interval": HOURLY}
        per_request = max(1, min(BATCH_TICKERS, BATCH_CANDLES // ((end - start) // (HOURLY * 60) + 1)))
        for chunk in _batches(self._tiered(markets), per_request):
            live = [ticker for ticker, _, historical in chunk if not historical]
            body = self._batch_candlesticks(live, query) if live else None
            served = _served(body) if body is not None else set()
            if body is not None:
                yield _raw("price_history", day, body, "markets", asked_for=tuple(t for t, _, _ in chunk),
                           context={"market_tickers": ",".join(live), "period_interval": str(HOURLY)})
            for ticker, series, historical in chunk:
                if ticker not in served:
                    yield self._market_candlesticks(day, ticker, series, historical, query)

    def _batch_candlesticks(self, tickers: list[str], query: dict[str, int]) -> Any:
        """The batch answer for the markets, or None when it is refused with 404 (a ticker it does not know)."""
        try:
            return self.http.get_json("/markets/candlesticks", {**query, "market_tickers": ",".join(tickers)})
        except ApiError as error:
            if error.status != 404:
                raise
            return None

    def _tiered(self, markets: pl.DataFrame) -> list[_Tiered]:
        """Each market's id and series, and whether it settled before the cutoff (the historical tier's), by id."""
        cutoff = datetime.fromtimestamp(self.cutoff("market_settled_ts"), UTC)
        historical = pl.col("status").is_in(_SETTLED) & (pl.col("resolved_at") < cutoff)
        return markets.select("id", "series_id", historical.fill_null(False)).sort("id").rows()

    def _market_candlesticks(self, day: date, ticker: str, series: str | None, historical: bool,
                             query: dict[str, int]) -> RawPage:
        """One market's candlesticks: from the historical tier when it settled before the cutoff or when the
        live tier does not know it (404), else from the live tier."""
        market = quote(ticker, safe="")
        body = None
        if not historical:
            if series is None:
                raise ApiError(f"market {ticker}: its series is unknown, so its candlesticks cannot be asked for")
            try:
                body = self.http.get_json(f"/series/{quote(series, safe='')}/markets/{market}/candlesticks", query)
            except ApiError as error:
                if error.status != 404:
                    raise
        if body is None:
            body = self.http.get_json(f"/historical/markets/{market}/candlesticks", query)
        return _raw("price_history", day, body, "candlesticks", asked_for=(ticker,),
                    context={"market_id": ticker, "period_interval": str(HOURLY)})

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


def _raw(entity: str, day: date, body: Any, items_key: str, *, asked_for: tuple[str, ...] = (),
         context: dict[str, str] | None = None, fetched_at: datetime | None = None,
         conflicting: list[Any] | None = None) -> RawPage:
    """A page of Kalshi's answers (`fetched_at`: now, unless it was read earlier)."""
    return RawPage(PLATFORM, entity, PLATFORM, day, fetched_at or datetime.now(UTC), body, items_key, asked_for,
                   context or {}, conflicting or [])


def _batches(markets: list[_Tiered], per_request: int) -> Iterator[list[_Tiered]]:
    """The markets in runs of consecutive ids, each holding `per_request` the live tier serves (the last fewer),
    with the historical ones among them."""
    chunk: list[_Tiered] = []
    live = 0
    for market in markets:
        chunk.append(market)
        live += not market[2]
        if live == per_request:
            yield chunk
            chunk, live = [], 0
    if chunk:
        yield chunk


def _served(body: Any) -> set[str]:
    """The markets a batch candlesticks answer has an entry for."""
    entries = body.get("markets") if isinstance(body, dict) else None
    if not isinstance(entries, list):
        raise ApiError(f"GET /markets/candlesticks: no \"markets\" array in the answer {str(body)[:120]!r}")
    return {entry["market_ticker"] for entry in entries
            if isinstance(entry, dict) and isinstance(entry.get("market_ticker"), str)}


def _unix(value: str) -> int:
    """An RFC 3339 time (its `T` and `Z` in either case) as Unix seconds."""
    return int(datetime.fromisoformat(value.upper().replace("Z", "+00:00")).astimezone(UTC).timestamp())
