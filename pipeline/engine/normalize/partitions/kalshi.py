"""Kalshi's own API (PMW_SOURCE=direct) as a partition source: `KalshiPages` read, then normalized.

Markets are nested under their events (`kalshi_markets`) and kept by the unified path's liveness rule
(`liveness.live_on`); events and series are those asked for.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date

import polars as pl

from pipeline.engine.normalize.pages import kalshi_markets, normalize_pages, normalized_stream
from pipeline.engine.normalized import MarketsDone, Normalized
from pipeline.engine.schema import Source
from pipeline.engine.sources.coverage import Coverage
from pipeline.engine.sources.http import RequestStats
from pipeline.engine.sources.kalshi import PLATFORM, KalshiPages
from pipeline.engine.sources.liveness import live_on

DIRECT = Source.DIRECT.value


class KalshiPartitions:
    """A `PartitionSource` over Kalshi's public API v2: `KalshiPages`, normalized."""

    platform = PLATFORM

    def __init__(self, pages: KalshiPages) -> None:
        self.pages = pages

    def requests(self) -> RequestStats:
        return self.pages.http.stats.snapshot()

    def coverage(self) -> Coverage:
        return Coverage()

    def markets(self, day: date) -> Normalized:
        listed = kalshi_markets(self.pages.market_pages(day), self.pages.event_pages(day))
        return Normalized(listed.rows.filter(live_on(day)), listed.rejects)

    def members(self, day: date, table: str, ids: set[str]) -> Normalized:
        pages = self.pages.event_pages(day) if table == "events" else self.pages.series_pages(day)
        listed = normalize_pages(table, pages, source=DIRECT)
        return Normalized(listed.rows.filter(pl.col("id").is_in(sorted(ids))), listed.rejects)

    def trades(self, day: date, markets: pl.DataFrame) -> Iterator[Normalized | MarketsDone]:
        tickers = markets["id"].sort().to_list()
        yield from normalized_stream(self.pages.trade_pages(day, tickers), markets, source=DIRECT)

    def price_history(self, day: date, markets: pl.DataFrame) -> Iterator[Normalized | MarketsDone]:
        yield from normalized_stream(self.pages.candlestick_pages(day, markets), markets, source=DIRECT)

    def asked(self, table: str, markets: pl.DataFrame, day: date) -> set[str]:
        return set(markets["id"].to_list())

    def window_markets(self, first: date, last: date) -> Normalized:
        listed = kalshi_markets(self.pages.market_pages(first), self.pages.event_pages(first))
        return Normalized(listed.rows.filter(live_on(first, last)), listed.rejects)

    def window_trades(self, first: date, last: date,
                      markets: pl.DataFrame) -> Iterator[Normalized | MarketsDone]:
        """Each market's trades from `min_ts` at the window's start to `max_ts` at its end."""
        tickers = markets["id"].sort().to_list()
        yield from normalized_stream(self.pages.trade_pages(first, tickers, last), markets, source=DIRECT)

    def window_price_history(self, first: date, last: date,
                             markets: pl.DataFrame) -> Iterator[Normalized | MarketsDone]:
        yield from normalized_stream(self.pages.candlestick_pages(first, markets, last), markets, source=DIRECT)
