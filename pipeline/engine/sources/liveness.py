"""Which markets belong to a day's partition: those tradable at some moment of the day. One rule, `live_on`,
a polars expression over the markets table's columns; `live_records` applies it to the unified API's raw
market records, whose times are read as the normaliser reads them.

A market whose start or end is unknown (or cannot be read) counts as live, so that it reaches the
normaliser, and the rejects area if it must, instead of vanishing here.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from itertools import compress, repeat
from typing import Any

import polars as pl

from pipeline.engine.normalize.frames import parse_iso

TIME_COLUMNS = ("trading_start_at", "created_at", "trading_end_at", "resolved_at")  # what `live_on` reads


def live_on(day: date, last: date | None = None) -> pl.Expr:
    """Markets tradable at some moment of the day (or of some day from `day` to `last`): trading started (or, if
    the start is unknown, the market was created) before the day ends, and neither the end of trading nor the
    resolution came before it starts."""
    day_start = datetime.combine(day, datetime.min.time(), UTC)
    window_end = datetime.combine(last or day, datetime.min.time(), UTC) + timedelta(days=1)
    start = pl.coalesce("trading_start_at", "created_at")
    end = pl.col("trading_end_at")
    stop = pl.min_horizontal(end, pl.col("resolved_at"))  # nulls ignored: no resolution means the end
    return start.is_null() | end.is_null() | ((start < window_end) & (stop > day_start))


def live_records(records: list[Any], day: date, last: date | None = None) -> list[Any]:
    """The unified API's market records (as parsed JSON) that `live_on` keeps for the day (or the days up to
    `last`)."""
    objects = records if set(map(type, records)) <= {dict} else [r if type(r) is dict else {} for r in records]
    times = pl.DataFrame([_iso_texts(objects, name) for name in TIME_COLUMNS]).select(
        parse_iso(pl.col(name)).alias(name) for name in TIME_COLUMNS
    )
    return list(compress(records, times.select(live_on(day, last)).to_series().to_list()))


def _iso_texts(objects: list[dict[str, Any]], name: str) -> pl.Series:
    """A field of the records as text; a value of another JSON type is no time that can be read."""
    values = list(map(dict.get, objects, repeat(name)))
    if not set(map(type, values)) <= {str, type(None)}:
        values = [value if type(value) is str else None for value in values]
    return pl.Series(name, values, dtype=pl.String())
