"""Kalshi's records as its API v2 sends them: the fields each endpoint's records are read as, its doubled prices
and counts (a decimal string beside the deprecated integer), its times, and the shapes of its bodies."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import polars as pl

from pipeline.engine.normalize.native_frames import (
    decimal,
    flag,
    iso_text,
    number,
    shape_error,
    struct,
    text,
    texts,
    unix_number,
)
from pipeline.engine.normalize.rows import exact_price, quoted
from pipeline.engine.schema import Field
from pipeline.engine.wire_times import parse_iso

_GO_ZERO_TIME = "0001-01-01T00:00:00Z"  # Go's zero time.Time: how Kalshi writes an unknown time
OHLC = ("open", "high", "low", "close")


def _dollars_fields(*names: str) -> tuple[Field, ...]:
    """A price as Kalshi sends it twice: `{name}_dollars` (a decimal string) and `{name}` (integer cents)."""
    return tuple(field for name in names for field in (text(f"{name}_dollars"), number(name)))


def _count_fields(*names: str) -> tuple[Field, ...]:
    """A count as Kalshi sends it twice: `{name}_fp` (a fixed-point string) and `{name}` (an integer)."""
    return tuple(field for name in names for field in (text(f"{name}_fp"), number(name)))


SERIES_FIELDS = (
    text("ticker", required=True),
    text("title", required=True),
    text("category"),
    texts("tags"),
    text("fee_type"),
    number("fee_multiplier"),
)
EVENT_FIELDS = (
    text("event_ticker", required=True),
    text("title", required=True),
    text("series_ticker"),
    text("category"),
    flag("mutually_exclusive"),
)
MARKET_FIELDS = (
    text("ticker", required=True),
    text("title", required=True),
    text("status", required=True),
    text("market_type", required=True),
    text("event_ticker"),
    text("result"),
    text("subtitle"),
    text("yes_sub_title"),
    text("strike_type"),
    number("floor_strike"),
    number("cap_strike"),
    *_dollars_fields("last_price", "yes_bid", "yes_ask", "no_bid", "no_ask", "liquidity", "settlement_value"),
    *_count_fields("volume", "volume_24h", "open_interest"),
    iso_text("created_time"),
    iso_text("open_time"),
    iso_text("close_time"),
    iso_text("expected_expiration_time"),
    iso_text("expiration_time"),
    iso_text("settlement_ts"),
    text("expiration_value"),
    text("rules_primary"),
)
TRADE_FIELDS = (
    text("trade_id", required=True),
    text("ticker", required=True),
    iso_text("created_time", required=True),
    text("taker_outcome_side"),
    text("taker_book_side"),
    text("taker_side"),
    flag("is_block_trade"),
    *_count_fields("count"),
    *_dollars_fields("yes_price", "no_price"),
)
CANDLE_FIELDS = (
    unix_number("end_period_ts", required=True),
    struct("price", *_dollars_fields(*OHLC, "previous"), required=True),
    struct("yes_bid", *_dollars_fields(*OHLC)),
    struct("yes_ask", *_dollars_fields(*OHLC)),
    *_count_fields("volume", "open_interest"),
)


class Decimals:
    """The expressions of Kalshi's doubled fields (new decimal string first, old number second), keeping the
    problems they can have (a new field that is no number; both missing where a value is needed)."""

    def __init__(self) -> None:
        self.problems: list[pl.Expr] = []

    def dollars(self, name: str, *, within: str | None = None, required: bool = False) -> pl.Expr:
        """A price in dollars: `{name}_dollars`, else `{name}` (integer cents) in dollars."""
        return self._either(f"{name}_dollars", name, _cents_to_dollars(_field(name, within)), within, required)

    def count(self, name: str, *, required: bool = False) -> pl.Expr:
        """A number of contracts: `{name}_fp`, else `{name}`."""
        return self._either(f"{name}_fp", name, pl.col(name), None, required)

    def _either(self, new: str, old: str, fallback: pl.Expr, within: str | None, required: bool) -> pl.Expr:
        path = f"{within}." if within else ""
        value, problem = decimal(_field(new, within), f"{path}{new}")
        value = pl.coalesce(value, fallback)
        self.problems.append(problem)
        if required:
            missing = f"missing required field '{path}{new}' (or '{path}{old}')"
            self.problems.append(pl.when(value.is_null()).then(pl.lit(missing)))
        return value


def _cents_to_dollars(cents: pl.Expr) -> pl.Expr:
    """Cents as dollars, exactly: polars computes `cents / 100` as `cents * 0.01`, which makes 35 cents
    0.35000000000000003; `exact_price` rounds to Kalshi's finest precision (6 decimals), the double nearest 0.35."""
    return exact_price(cents / 100)


def _field(name: str, within: str | None) -> pl.Expr:
    return pl.col(name) if within is None else pl.col(within).struct.field(name)


def kalshi_time(name: str) -> pl.Expr:
    """A Kalshi time; Go's zero time (`0001-01-01T00:00:00Z`) means unknown and is stored as null."""
    value = pl.col(name)
    return parse_iso(pl.when(value != _GO_ZERO_TIME).then(value))


def records_of(body: Any, entity: str, key: str, single: str | None = None) -> list[Any]:
    """The records of a Kalshi response: `body[key]` when it is an array, `[body[single]]` when an object
    (`/markets/{ticker}` sends `{"market": {...}}`, `/series/{ticker}` `{"series": {...}}`)."""
    if isinstance(body, dict):
        if isinstance(body.get(key), list):
            return body[key]
        if single is not None and isinstance(body.get(single), dict):
            return [body[single]]
    expected = f'an object with "{key}" (an array)' + (f' or "{single}" (an object)' if single else "")
    raise shape_error(f"kalshi {entity}", expected, body)


def unknown_value(native: pl.Expr, mapped: pl.Expr, wire: str, known: Mapping[str, Any]) -> pl.Expr:
    listed = ", ".join(known)
    return pl.when(native.is_not_null() & mapped.is_null()).then(
        pl.concat_str([pl.lit(f"field '{wire}': not one of {listed}: "), quoted(native)])
    )
