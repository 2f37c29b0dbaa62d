"""The price-history calls that cover markets over a span of time: 10 markets a call, and as few calls as the
5,000-point cap allows.

A call names at most 10 markets and returns at most 5,000 points (hourly, one per outcome and period of the
market's life). For one day, 10 markets fit in one call; over a window of days they may not, so each batch
of 10 markets is cut in time, into slices that each hold at most the cap by an estimate read from the
listing: every outcome of a market has a point for each hour of the market's life within the slice (its
trading start, or creation, to the end of trading or the resolution, whichever comes first; the whole span
when unknown). A slice the server still fills to the cap is asked again in halves by the source, so an
estimate that falls short costs requests, never points.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from itertools import pairwise

import numpy as np
import polars as pl

from pipeline.engine.schema import MAX_LIMIT, MAX_PRICE_HISTORY_MARKETS

PERIOD_S = 3_600  # hourly points


@dataclass(frozen=True)
class PriceCall:
    """One call: its markets (rows of the `markets` table), its span (Unix seconds, both ends included), and
    whether it is the last call of its markets (they are complete once it is answered)."""

    markets: pl.DataFrame
    start: int
    end: int
    last_of_batch: bool


def price_calls(markets: pl.DataFrame, start: int, end: int,
                cap: int = MAX_LIMIT["price_history"]) -> Iterator[PriceCall]:
    """The calls for `markets` (any order; asked in id order) between `start` and `end`, batch by batch."""
    for batch in markets.sort("id").iter_slices(MAX_PRICE_HISTORY_MARKETS):
        edges = _slice_edges(_points_per_period(batch, start, end), start, end, cap)
        for index, (low, high) in enumerate(pairwise(edges)):
            yield PriceCall(batch, low, high - 1, index == len(edges) - 2)


def _periods(start: int, end: int) -> np.ndarray:
    """The start of every hourly period that overlaps [start, end]."""
    return np.arange(start // PERIOD_S, end // PERIOD_S + 1, dtype=np.int64) * PERIOD_S


def _points_per_period(batch: pl.DataFrame, start: int, end: int) -> np.ndarray:
    """The points the batch can have in each period: its markets' outcomes in the periods of their lives."""
    spans = batch.select(
        pl.col("outcomes").list.len().fill_null(1).clip(lower_bound=1).alias("outcomes"),
        pl.coalesce("trading_start_at", "created_at").dt.epoch("s").fill_null(start).alias("born"),
        pl.min_horizontal("trading_end_at", "resolved_at").dt.epoch("s").fill_null(end).alias("ended"),
    )
    periods = _periods(start, end)
    counts = np.zeros(len(periods), dtype=np.int64)
    for outcomes, born, ended in spans.iter_rows():
        counts += outcomes * ((periods + PERIOD_S > born) & (periods <= ended))
    return counts


def _slice_edges(counts: np.ndarray, start: int, end: int, cap: int) -> list[int]:
    """Where slices begin (and, last, one past the end), each holding at most the cap by `counts`, leaving
    room for one period more at either edge (a server labelling points by period end shifts them by one)."""
    room = max(cap - 2 * int(counts.max(initial=0)), 1)
    periods = _periods(start, end)
    edges = [start]
    held = 0
    for index, count in enumerate(counts.tolist()):
        if held and held + count > room:
            edges.append(int(periods[index]))
            held = 0
        held += count
    return [*edges, end + 1]
