"""What an ingestion asset asks of a source session for one platform's partitions: a table's rows, normalized."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date
from typing import Protocol, runtime_checkable

import polars as pl

from pipeline.engine.normalized import MarketsDone, Normalized
from pipeline.engine.service_figures import ServiceFigures
from pipeline.engine.sources.coverage import Coverage
from pipeline.engine.sources.http import RequestStats


class PartitionSource(Protocol):
    """A source session (one asset step) for one platform: its partitions' rows, table by table, each read from the
    source and normalized, and what the reads cost."""

    platform: str

    def markets(self, day: date) -> Normalized:
        """The markets live on the day (tradable at some moment of it)."""
        ...

    def members(self, day: date, table: str, ids: set[str]) -> Normalized:
        """The `events` or `series` with these ids."""
        ...

    def trades(self, day: date, markets: pl.DataFrame) -> Iterator[Normalized | MarketsDone]:
        """Trades of the partition's markets (rows of the `markets` table), each row's `market_id` the id of the
        market it was asked for, with a `MarketsDone` once markets are complete (asked for in id order).

        Rows of other days may come along; the caller keeps the day's.
        """
        ...

    def price_history(self, day: date, markets: pl.DataFrame) -> Iterator[Normalized | MarketsDone]:
        """Price points of the partition's markets within the day, as `trades` delivers trades."""
        ...

    def requests(self) -> RequestStats:
        """What the session's requests cost so far."""
        ...

    def coverage(self) -> Coverage:
        """How far the session's reads reached."""
        ...


@runtime_checkable
class WindowSource(PartitionSource, Protocol):
    """A source that reads trades and price history over a window of consecutive days in one sweep: the rows of
    every day of the window, as `trades` and `price_history` deliver a day's, their `date` the window's first."""

    def asked(self, table: str, markets: pl.DataFrame, day: date) -> set[str]:
        """The markets of a day's partition (rows of the `markets` table) whose `table` rows a run of the day
        alone asks for."""
        ...

    def window_markets(self, first: date, last: date) -> Normalized:
        """The markets live on some day from `first` to `last`: those of every day of the window, each once."""
        ...

    def window_trades(self, first: date, last: date,
                      markets: pl.DataFrame) -> Iterator[Normalized | MarketsDone]:
        """Trades of `markets` (the markets of every day of the window) from `first` to `last`."""
        ...

    def window_price_history(self, first: date, last: date,
                             markets: pl.DataFrame) -> Iterator[Normalized | MarketsDone]:
        """Price points of `markets` from `first` to `last`."""
        ...


@runtime_checkable
class SelfReporting(Protocol):
    """A source whose answers say something of themselves (list totals, points counted, cache and freshness)."""

    def figures(self, table: str) -> ServiceFigures:
        """What the service said about the answers behind the session's `table` partition."""
        ...
