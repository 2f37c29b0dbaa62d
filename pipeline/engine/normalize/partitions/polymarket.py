"""Polymarket's own APIs (PMW_SOURCE=direct) as a partition source: `PolymarketPages` read, then normalized.

Markets are kept by the unified path's liveness rule (`liveness.live_on`: an open market is live up to its fetch, a
closed one up to its `closedTime`); an event or series that several requests answer is kept once.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date

import polars as pl

from pipeline.engine.normalize.pages import normalize_pages, normalized_stream
from pipeline.engine.normalized import MarketsDone, Normalized
from pipeline.engine.schema import Source
from pipeline.engine.sources.coverage import Coverage
from pipeline.engine.sources.http import RequestStats, combined
from pipeline.engine.sources.liveness import live_on
from pipeline.engine.sources.polymarket import PLATFORM, PolymarketPages

DIRECT = Source.DIRECT.value


class PolymarketPartitions:
    """A `PartitionSource` over Gamma, the CLOB and the Data API: `PolymarketPages`, normalized."""

    platform = PLATFORM

    def __init__(self, pages: PolymarketPages) -> None:
        self.pages = pages

    def requests(self) -> RequestStats:
        return combined([layer.stats for layer in (self.pages.gamma, self.pages.clob, self.pages.data)])

    def coverage(self) -> Coverage:
        return self.pages.coverage

    def markets(self, day: date) -> Normalized:
        listed = normalize_pages("markets", self.pages.market_pages(day), source=DIRECT)
        return Normalized(listed.rows.filter(live_on(day)), listed.rejects)

    def members(self, day: date, table: str, ids: set[str]) -> Normalized:
        listed = normalize_pages(table, self.pages.member_pages(day, table, ids), source=DIRECT)
        return Normalized(listed.rows.unique("id", keep="first", maintain_order=True), listed.rejects)

    def trades(self, day: date, markets: pl.DataFrame) -> Iterator[Normalized | MarketsDone]:
        yield from normalized_stream(self.pages.trade_pages(day, markets), markets, source=DIRECT)

    def price_history(self, day: date, markets: pl.DataFrame) -> Iterator[Normalized | MarketsDone]:
        yield from normalized_stream(self.pages.price_pages(day, markets), markets, source=DIRECT)

    def asked(self, table: str, markets: pl.DataFrame, day: date) -> set[str]:
        return set(markets["id"].to_list())

    def window_markets(self, first: date, last: date) -> Normalized:
        listed = normalize_pages("markets", self.pages.market_pages(first, last), source=DIRECT)
        return Normalized(listed.rows.filter(live_on(first, last)), listed.rejects)

    def window_trades(self, first: date, last: date,
                      markets: pl.DataFrame) -> Iterator[Normalized | MarketsDone]:
        """Each market's trades paged once back to the window's first day."""
        yield from self.trades(first, markets)

    def window_price_history(self, first: date, last: date,
                             markets: pl.DataFrame) -> Iterator[Normalized | MarketsDone]:
        """Each outcome token's history over the whole window, a request each."""
        yield from normalized_stream(self.pages.price_pages(first, markets, last), markets, source=DIRECT)
