"""Orderbook answers -> rows of `orderbook_levels` and `orderbook_snapshots`, for one snapshot round.

Each answer is read as the unified API's Orderbook (`schema.ORDERBOOK_FIELDS`) with the exact JSON type
checks of `frames`; an answer that is no Orderbook (no `data` object, a wrong type, a missing field, a time
without a UTC offset) becomes a reject with the reason, and its market has no rows in the round.

Rows belong to the market the pipeline asked for, whatever id the answer carries (kept in
`_served_market_id` when it differs), and to the round's time (`snapshot_at`), not the book's own `timestamp`,
which is kept as served: a retried round lands under the same time and so replaces itself.

The spec does not say in which order a side's levels come. A side whose prices run towards the best price
(best last, as Kalshi's own API lists its bids) is turned round, so that level 1 is always the best price;
a side in no price order is kept as served, for the `levels_in_price_order` check to report. A crossed book
is kept as served too (its spread is negative), for `book_not_crossed` to report.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime

import polars as pl

from pipeline.engine.normalize.answers import unwrap
from pipeline.engine.normalize.native_frames import read
from pipeline.engine.normalize.rows import rejects_frame, value_reason
from pipeline.engine.normalized import Normalized
from pipeline.engine.raw_pages import BookAnswer
from pipeline.engine.schema import ORDERBOOK_FIELDS, ORDERBOOK_LEVELS, ORDERBOOK_SNAPSHOTS, BookSide, OutcomeSide
from pipeline.engine.wire_times import parse_iso

_REASON = "_reason"
_ASKED = "_asked"
_SIDES = {(o.value, b.value): f"{o.value}_{b.value}s" for o in OutcomeSide for b in BookSide}


@dataclass(frozen=True)
class RoundRows:
    """A round's levels and snapshots; the rejects (answers that are no Orderbook) go with the snapshots."""

    levels: Normalized
    snapshots: Normalized


def normalize_round(answers: list[BookAnswer], platform: str, day: date, round_at: datetime,
                    source: str) -> RoundRows:
    """The rows of one platform's snapshot round, landed in the partition (platform, day)."""
    held, no_data = unwrap(answers, "orderbook")
    asked = {id(data): a for a, data in held}
    native = read(ORDERBOOK_FIELDS, [data for _, data in held])
    answer_of = [asked[id(record)] for record in native.kept]
    frame = native.frame.with_columns(
        pl.Series(_ASKED, [a.market_id for a in answer_of], pl.String),
        pl.Series("_fetched_at", [a.fetched_at for a in answer_of], pl.Datetime("us", "UTC")),
        parse_iso(pl.col("timestamp")).alias("book_time"),
    ).with_columns(pl.coalesce(
        value_reason(native.fields),
        pl.when(pl.col("book_time").is_null()).then(
            pl.concat_str([pl.lit("field 'timestamp': not an ISO-8601 time with a UTC offset: "),
                           pl.col("timestamp")])),
    ).alias(_REASON))
    bad = frame[_REASON].is_not_null()
    rejected = [*native.rejected, *no_data,
                *zip((native.kept[i] for i in bad.arg_true()), frame.filter(bad)[_REASON], strict=True)]
    books = _books(frame.filter(~bad), platform, day, round_at, source)
    fetched = max((a.fetched_at for a in answers), default=round_at)
    empty_rejects = rejects_frame([], fetched)
    return RoundRows(
        levels=Normalized(_levels(books), empty_rejects),
        snapshots=Normalized(_snapshots(books), rejects_frame(rejected, fetched)),
    )


def _books(frame: pl.DataFrame, platform: str, day: date, round_at: datetime, source: str) -> pl.DataFrame:
    """One row per book: its four sides as lists of levels, best price first where the side runs the other way."""
    sides = [_best_first(pl.col(outcome).struct.field(f"{side}s"), side).alias(column)
             for (outcome, side), column in _SIDES.items()]
    return frame.select(
        pl.lit(round_at, pl.Datetime("us", "UTC")).alias("snapshot_at"),
        pl.col(_ASKED).alias("market_id"),
        pl.lit(platform).alias("platform"),
        pl.lit(day, pl.Date).alias("date"),
        pl.lit(source).alias("_source"),
        "_fetched_at",
        pl.when(pl.col("market_id") != pl.col(_ASKED)).then(pl.col("market_id")).alias("_served_market_id"),
        pl.col("book_time").alias("timestamp"),
        *sides,
        pl.col("metadata").struct.field("min_order_size"),
        pl.col("metadata").struct.field("tick_size"),
        pl.col("metadata").struct.field("neg_risk"),
    )


def _best_first(levels: pl.Expr, side: str) -> pl.Expr:
    """The side's levels with the best price first: turned round when its prices run towards the best one."""
    prices = levels.list.eval(pl.element().struct.field("price"))
    first, last = prices.list.first(), prices.list.last()
    towards_best = (last > first) if side == BookSide.BID.value else (last < first)
    return pl.when(towards_best.fill_null(False)).then(levels.list.reverse()).otherwise(levels)


def _levels(books: pl.DataFrame) -> pl.DataFrame:
    """One row per level: the sides unpivoted, exploded, numbered from the best price."""
    keys = ["snapshot_at", "market_id", "platform", "date", "_source", "_fetched_at", "_served_market_id"]
    per_side = [
        books.select(*keys, pl.lit(outcome).alias("outcome_side"), pl.lit(side).alias("book_side"),
                     pl.col(column).alias("levels"))
        for (outcome, side), column in _SIDES.items()
    ]
    levels = (
        pl.concat(per_side)
        .filter(pl.col("levels").list.len() > 0)
        .with_columns(pl.col("levels").list.eval(pl.int_range(1, pl.len() + 1)).alias("level"))
        .explode("levels", "level")
        .with_columns(pl.col("levels").struct.field("price"), pl.col("levels").struct.field("size"))
    )
    return levels.select(pl.col(c).cast(dtype) for c, dtype in ORDERBOOK_LEVELS.polars_schema.items())


def _snapshots(books: pl.DataFrame) -> pl.DataFrame:
    """One row per book: the YES book's best prices, their sizes, spread, mid and depth."""
    bids, asks = pl.col("yes_bids"), pl.col("yes_asks")
    bid_prices = bids.list.eval(pl.element().struct.field("price"))
    ask_prices = asks.list.eval(pl.element().struct.field("price"))
    best_bid, best_ask = bid_prices.list.max(), ask_prices.list.min()
    summary = books.with_columns(
        best_bid.alias("best_bid"),
        best_ask.alias("best_ask"),
        ((best_bid + best_ask) / 2).alias("mid"),
        (best_ask - best_bid).alias("spread"),
        _size_at(bids, bid_prices.list.arg_max()).alias("best_bid_size"),
        _size_at(asks, ask_prices.list.arg_min()).alias("best_ask_size"),
        _depth(bids).alias("bid_depth"),
        _depth(asks).alias("ask_depth"),
        bids.list.len().cast(pl.Int64).alias("bid_levels"),
        asks.list.len().cast(pl.Int64).alias("ask_levels"),
    )
    return summary.select(pl.col(c).cast(dtype) for c, dtype in ORDERBOOK_SNAPSHOTS.polars_schema.items())


def _size_at(levels: pl.Expr, index: pl.Expr) -> pl.Expr:
    """The size of the level at `index` of a side (null for an empty side)."""
    return levels.list.get(index, null_on_oob=True).struct.field("size")


def _depth(levels: pl.Expr) -> pl.Expr:
    """The sizes of a side summed: 0 for an empty side."""
    return pl.when(levels.list.len() > 0).then(levels.list.eval(pl.element().struct.field("size")).list.sum()
                                                ).otherwise(0.0)
