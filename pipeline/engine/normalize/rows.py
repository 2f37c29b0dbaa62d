"""A wire frame's values judged row by row in polars (required, readable times, quantities not negative), the
table's rows built from it (times parsed, lineage added), and the rejects of a call with their reasons."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

import orjson
import polars as pl

from pipeline.engine.normalize.wire_frame import SHOWN_CHARS
from pipeline.engine.schema import REJECTS_SCHEMA, Field, Table
from pipeline.engine.wire_times import UNIX_SECONDS, parse_iso, parse_unix

_MILLISECONDS_UP_TO = 1e14


def utc(moment: dt.datetime) -> dt.datetime:
    """`moment` in UTC; a naive time is refused, because its zone is unknown."""
    if moment.tzinfo is None:
        raise ValueError(f"fetched_at must be timezone-aware, got {moment!r}")
    return moment.astimezone(dt.UTC)


# -- problems of values, per row, in polars ----------------------------------------------------------------


def value_reason(fields: tuple[Field, ...]) -> pl.Expr:
    """Per row of a wire frame, why it cannot be kept (its first problem in field order), or null."""
    return pl.coalesce([p for field in fields for p in _problems(field, pl.col(field.name), field.wire)])


def _problems(field: Field, value: pl.Expr, path: str) -> list[pl.Expr]:
    """Expressions giving, per row, what is wrong with the value of `field`: a reason, or null."""
    found: list[pl.Expr] = []
    if field.required:
        found.append(pl.when(value.is_null()).then(pl.lit(f"missing required field '{path}'")))
    if field.kind == "timestamp":
        found.append(_unreadable_time(field, value, path))
    if field.kind == "scalar" and field.non_negative:  # a quantity: no check judges it, a negative one means nothing
        found.append(_negative(value, path))
    if field.kind == "struct":
        found += [pl.when(value.is_not_null()).then(p) for p in _child_problems(field, value, path)]
    if field.kind in ("list", "map") and field.children:
        item_path = f"{path}[]" if field.kind == "list" else f"{path}{{}}"
        in_items = _child_problems(field, pl.element(), item_path)
        if in_items:
            found.append(value.list.eval(pl.coalesce(in_items)).list.drop_nulls().list.first())
    return found


def _child_problems(field: Field, value: pl.Expr, path: str) -> list[pl.Expr]:
    return [p for c in field.children for p in _problems(c, value.struct.field(c.name), f"{path}.{c.wire}")]


def _unreadable_time(field: Field, value: pl.Expr, path: str) -> pl.Expr:
    if field.time_format == "iso":
        what, text = pl.lit("an ISO-8601 time with a UTC offset"), quoted(value)
    else:
        in_milliseconds = (value > UNIX_SECONDS[1]) & (value <= _MILLISECONDS_UP_TO)
        what = pl.when(in_milliseconds).then(pl.lit("a Unix time in seconds (in milliseconds?)"))
        what, text = what.otherwise(pl.lit("a Unix time")), value.cast(pl.String)
    unreadable = value.is_not_null() & _time(field, value).is_null()
    return pl.when(unreadable).then(pl.concat_str([pl.lit(f"field '{path}': not "), what, pl.lit(": "), text]))


def _negative(value: pl.Expr, path: str) -> pl.Expr:
    return pl.when(value < 0).then(pl.concat_str([pl.lit(f"field '{path}': negative: "), value.cast(pl.String)]))


def quoted(text: pl.Expr) -> pl.Expr:
    """A text value as a reason shows it: quoted, and cut to its first characters."""
    return pl.concat_str([pl.lit("'"), text.str.slice(0, SHOWN_CHARS), pl.lit("'")])


def book_quote(price: pl.Expr) -> pl.Expr:
    """A best bid or ask, or null when that side of the book is empty. Both platforms write an empty side as a
    price no order can rest at: 0 for no bid, 0 or 1 for no ask (Kalshi quotes 1 to 99 cents, Polymarket's
    CLOB one tick above 0 to one below 1), so only a price strictly between 0 and 1 is a quote."""
    return pl.when((price > 0) & (price < 1)).then(price)


PRICE_DECIMALS = 6  # the finest a price is written in: Kalshi's fixed-point dollars, Polymarket's 6-decimal USDC


def exact_price(price: pl.Expr) -> pl.Expr:
    """A price as the platform wrote it, rid of binary float noise: Kalshi's cents over 100 (35 cents is
    0.35000000000000003 in polars) and Polymarket's Data API fill prices, the ratio of two 6-decimal amounts sent
    as a float (0.709999959 for 0.71), rounded to 6 decimals, the finest either platform prices in."""
    return price.round(PRICE_DECIMALS)


def _time(field: Field, value: pl.Expr) -> pl.Expr:
    """The UTC time a wire time stands for; null when it cannot be read."""
    return parse_iso(value) if field.time_format == "iso" else parse_unix(value)


# -- rows and rejects --------------------------------------------------------------------------------------


def rows(table: Table, frame: pl.DataFrame, lineage: Mapping[str, Any]) -> pl.DataFrame:
    """The table's columns in order: documented fields as stored, the others from the call's lineage."""
    return frame.select(
        stored(column.field, pl.col(column.name)).alias(column.name)
        if column.field is not None
        else pl.lit(lineage.get(column.name), dtype=column.dtype).alias(column.name)
        for column in table.columns
    )


def stored(field: Field, value: pl.Expr) -> pl.Expr:
    """The stored value of a wire value: times parsed, at any depth; everything else is stored as built."""
    if field.kind == "timestamp":
        return _time(field, value)
    timed = [c for c in field.children if _has_time(c)]
    if not timed:
        return value
    if field.kind == "struct":
        return _with_times(value, timed)
    return value.list.eval(_with_times(pl.element(), timed))  # items of an array, entries of a map


def _with_times(struct: pl.Expr, timed: list[Field]) -> pl.Expr:
    return struct.struct.with_fields([stored(c, struct.struct.field(c.name)).alias(c.name) for c in timed])


def _has_time(field: Field) -> bool:
    return field.kind == "timestamp" or any(_has_time(c) for c in field.children)


def rejects_frame(rejected: list[tuple[Any, str]], fetched_at: dt.datetime) -> pl.DataFrame:
    """The rejects of a call, each with its whole record as JSON text and the reason (REJECTS_SCHEMA)."""
    return pl.DataFrame(
        {
            "raw": [_raw(record) for record, _ in rejected],
            "reason": [reason for _, reason in rejected],
            "_fetched_at": [fetched_at] * len(rejected),
        },
        schema=REJECTS_SCHEMA,
    )


def _raw(record: Any) -> str:
    """The whole record as JSON text (repr() of what JSON cannot hold), so that a reject can be replayed."""
    try:
        return orjson.dumps(record, default=repr, option=orjson.OPT_NON_STR_KEYS).decode()
    except orjson.JSONEncodeError:  # an integer beyond 64 bits, a lone surrogate
        return repr(record)

