"""The orderbook snapshot rounds' tables (partitioned by the orderbook platforms and day) and the unified API's
orderbook answer they are read from."""

from __future__ import annotations

from enum import StrEnum

import polars as pl

from pipeline.engine.schema.core import (
    ORDERBOOK_PLATFORMS,
    SERVED_MARKET_ID,
    Field,
    Table,
    iso_time,
    number,
    string,
)


class OutcomeSide(StrEnum):
    """Which outcome's book a level is of: an orderbook has a YES book and a NO book."""

    YES = "yes"
    NO = "no"


class BookSide(StrEnum):
    BID = "bid"
    ASK = "ask"


_SNAPSHOT_AT = Field("snapshot_at", kind="timestamp", required=True,
                     doc="the snapshot round's time (UTC): one round takes every book of the platform's list once")
_BOOK_PLATFORM = string("platform", required=True, enum=tuple(ORDERBOOK_PLATFORMS), doc="platform identifier")
_BOOK_MARKET = string("market_id", required=True, doc="the market whose book was asked for")
_BEST_BID = "the YES book's highest bid price; null when it has no bid"

ORDERBOOK_LEVELS = Table(
    name="orderbook_levels",
    resource="Orderbook",
    doc="Every price level of the orderbooks of a snapshot round: one row per round, market, outcome side "
        "(yes/no), book side (bid/ask) and level.",
    primary_key=("platform", "date", "snapshot_at", "market_id", "outcome_side", "book_side", "level"),
    time_column="snapshot_at",
    sort_key=("market_id", "snapshot_at", "outcome_side", "book_side", "level"),
    added=(SERVED_MARKET_ID,),
    listed_by_id=False,
    platforms=ORDERBOOK_PLATFORMS,
    rounds=True,
    references_markets=False,
    fields=(
        _SNAPSHOT_AT,
        _BOOK_MARKET,
        _BOOK_PLATFORM,
        string("outcome_side", required=True, enum=tuple(OutcomeSide), doc="the YES book or the NO book"),
        string("book_side", required=True, enum=tuple(BookSide), doc="bid or ask"),
        Field("level", dtype=pl.Int64(), required=True,
              doc="1 for the best price of its side, then 2, 3, ... away from it"),
        number("price", required=True),
        number("size", required=True, doc="shares or contracts resting at the price"),
    ),
)

ORDERBOOK_SNAPSHOTS = Table(
    name="orderbook_snapshots",
    resource="Orderbook",
    doc="One row per snapshot round and market: the YES book's best prices, spread and depth, and the book's "
        "trading rules.",
    primary_key=("platform", "date", "snapshot_at", "market_id"),
    time_column="snapshot_at",
    sort_key=("market_id", "snapshot_at"),
    added=(SERVED_MARKET_ID,),
    listed_by_id=False,
    platforms=ORDERBOOK_PLATFORMS,
    rounds=True,
    references_markets=False,
    fields=(
        _SNAPSHOT_AT,
        _BOOK_MARKET,
        _BOOK_PLATFORM,
        iso_time("timestamp", doc="the book's time as the server stated it"),
        number("best_bid", nullable=True, doc=_BEST_BID),
        number("best_ask", nullable=True, doc="the YES book's lowest ask price; null when it has no ask"),
        number("mid", nullable=True, doc="(best_bid + best_ask) / 2; null when a side is empty"),
        number("spread", nullable=True, doc="best_ask - best_bid (negative for a crossed book); null when a side "
                                            "is empty"),
        number("best_bid_size", nullable=True, doc="size at the best bid"),
        number("best_ask_size", nullable=True, doc="size at the best ask"),
        number("bid_depth", required=True, doc="the YES book's bid sizes summed"),
        number("ask_depth", required=True, doc="the YES book's ask sizes summed"),
        Field("bid_levels", dtype=pl.Int64(), required=True, doc="price levels on the YES book's bid side"),
        Field("ask_levels", dtype=pl.Int64(), required=True, doc="price levels on the YES book's ask side"),
        number("min_order_size", doc="the smallest order the platform takes"),
        number("tick_size", doc="the price increment"),
        Field("neg_risk", dtype=pl.Boolean(), doc="a leg of a negative-risk (mutually exclusive) group"),
    ),
)

# The unified API's orderbook answer (spec: Orderbook), read by pipeline.engine.normalize.orderbooks.
ORDERBOOK_LEVEL: tuple[Field, ...] = (number("price", required=True), number("size", required=True, non_negative=True))
ORDERBOOK_SIDE: tuple[Field, ...] = (
    Field("bids", kind="list", children=ORDERBOOK_LEVEL, required=True),
    Field("asks", kind="list", children=ORDERBOOK_LEVEL, required=True),
    number("depth", required=True),
)
ORDERBOOK_FIELDS: tuple[Field, ...] = (
    string("market_id", required=True),
    string("platform", required=True),
    string("timestamp", required=True),
    Field("yes", kind="struct", children=ORDERBOOK_SIDE, required=True),
    Field("no", kind="struct", children=ORDERBOOK_SIDE, required=True),
    Field(
        "metadata",
        kind="struct",
        required=True,
        children=(
            number("min_order_size", required=True),
            number("tick_size", required=True),
            Field("neg_risk", dtype=pl.Boolean(), required=True),
        ),
    ),
)
