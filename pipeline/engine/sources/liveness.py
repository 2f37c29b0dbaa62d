"""Which markets belong to a day's partition: those tradable at some moment of the day.

One rule, `live_on`, a polars expression over the markets table's columns; `live_records` applies it to the unified
API's raw market records. An unknown end counts as live, an open record is live up to its sync, and a market left
out on a record that may be stale is asked about again (`unsure_records`, `partition_records`); a listing keeps
only the records a day from its first may hold (`records_from`). Why, in docs/design.md, "Liveness".
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, date, datetime, timedelta
from itertools import compress, repeat
from typing import Any

import polars as pl

from pipeline.engine.schema import MarketStatus
from pipeline.engine.wire_times import parse_iso

TIME_COLUMNS = ("trading_start_at", "created_at", "trading_end_at", "resolved_at")  # the times `live_on` reads
SYNCED = "last_synced_at"  # when the service synced the record (the direct sources: when the platform was read)
STATUS = "status"  # `live_on` reads it too: an open record was trading when synced
SELECTION = ("id", "event_id", *TIME_COLUMNS, SYNCED, STATUS)  # what a listing reads of a market record


def _bounds(day: date, last: date | None) -> tuple[datetime, datetime]:
    """The first moment of `day` and the first moment after `last` (or `day`)."""
    day_start = datetime.combine(day, datetime.min.time(), UTC)
    return day_start, datetime.combine(last or day, datetime.min.time(), UTC) + timedelta(days=1)


def live_on(day: date, last: date | None = None) -> pl.Expr:
    """Markets tradable at some moment of the day (or of some day from `day` to `last`): trading started (or, if
    the start is unknown, the market was created) before the day ends, and neither the end of trading nor the
    resolution came before it starts, or the record says the market was still open after it started (synced
    after the day's start with `status` open, whatever end of trading it gives)."""
    day_start, window_end = _bounds(day, last)
    start = pl.coalesce("trading_start_at", "created_at")
    end = pl.col("trading_end_at")
    open_since = (_is_open() & (pl.col(SYNCED) > day_start)).fill_null(False)  # no sync: no evidence
    return start.is_null() | end.is_null() | ((start < window_end) & ((_stop() > day_start) | open_since))


def surely_not_live(day: date, last: date | None = None) -> pl.Expr:
    """Markets that `live_on` leaves out on evidence that cannot be stale: a record synced after the days
    ended, or one that saw the end of trading (or the resolution) it gives, before the days, pass and does not
    say the market is still open (one that does outlived that end, and may trade on the days)."""
    day_start, window_end = _bounds(day, last)
    synced = pl.col(SYNCED)
    seen_ended = (_stop() <= day_start) & (synced >= _stop()) & ~_is_open()  # open: it outlived its end
    return ~live_on(day, last) & ((synced >= window_end) | seen_ended).fill_null(False)


def ended_before(day: date) -> pl.Expr:
    """Markets that no day from `day` on can hold: their record saw the end of trading (or the resolution) it
    gives, before `day` began, and does not say the market is still open. `surely_not_live` leaves such a market
    out of every day from `day` on, whatever the listing's freshness says (a record without a sync is never one)."""
    day_start = _bounds(day, None)[0]
    start, end = pl.coalesce("trading_start_at", "created_at"), pl.col("trading_end_at")
    ended = start.is_not_null() & end.is_not_null() & (_stop() <= day_start) & (pl.col(SYNCED) >= _stop())
    return (ended & ~_is_open()).fill_null(False)


def _is_open() -> pl.Expr:
    """Records that say the market is open (one without a status, or with another, does not)."""
    return (pl.col(STATUS) == MarketStatus.OPEN.value).fill_null(False)


def _stop() -> pl.Expr:
    return pl.min_horizontal(pl.col("trading_end_at"), pl.col("resolved_at"))  # nulls ignored: no resolution


def live_records(records: list[Any], day: date, last: date | None = None) -> list[Any]:
    """The unified API's market records (as parsed JSON) that `live_on` keeps for the day (or the days up to
    `last`)."""
    return list(compress(records, _times(records).select(live_on(day, last)).to_series().to_list()))


def records_from(records: list[Any], day: date) -> list[Any]:
    """The records of a listing that a day from `day` on may hold: all but those `ended_before` leaves out."""
    return list(compress(records, (~ended_records(records, day)).to_list()))


def ended_records(records: list[Any], day: date) -> pl.Series:
    """Per record, whether `ended_before` leaves it out of every day from `day` on."""
    return _times(records).select(ended_before(day)).to_series()


def unsure_records(records: list[Any], day: date, last: date | None = None,
                   freshness: Sequence[str] = ()) -> list[Any]:
    """The records that `live_on` leaves out for the day (or the days up to `last`) on no evidence that cannot be
    stale (`surely_not_live`): synced before the days ended, they may since have been extended. `freshness`: the
    listing's `data_freshness` texts, for records without a `last_synced_at`."""
    unsure = ~live_on(day, last) & ~surely_not_live(day, last)
    return list(compress(records, _times(records, freshness).select(unsure).to_series().to_list()))


def partition_records(records: list[Any], day: date, last: date | None = None,
                      freshness: Sequence[str] = ()) -> list[Any]:
    """The records of the day's partition (or of the days up to `last`): all but those `surely_not_live` leaves
    out (a market left out on a record that may be stale may have traded); `freshness` as for `unsure_records`."""
    kept = _times(records, freshness).select(~surely_not_live(day, last))
    return list(compress(records, kept.to_series().to_list()))


def _times(records: list[Any], freshness: Sequence[str] = ()) -> pl.DataFrame:
    """The records' times as the normalizer reads them (null where a record has none that can be read), and their
    `status`; a record's sync, where it gives none, the oldest of the listing's `freshness`."""
    objects = records if set(map(type, records)) <= {dict} else [r if type(r) is dict else {} for r in records]
    names = (*TIME_COLUMNS, SYNCED)
    times = pl.DataFrame([_iso_texts(objects, name) for name in (*names, STATUS)]).select(
        *(parse_iso(pl.col(name)).alias(name) for name in names), pl.col(STATUS)
    )
    oldest = pl.DataFrame({"at": list(freshness)}, schema={"at": pl.String()}).select(parse_iso(pl.col("at")).min())
    return times.with_columns(pl.coalesce(SYNCED, pl.lit(oldest.item(), dtype=times.schema[SYNCED])).alias(SYNCED))


def _iso_texts(objects: list[dict[str, Any]], name: str) -> pl.Series:
    """A field of the records as text; a value of another JSON type is no time (or status) that can be read."""
    values = list(map(dict.get, objects, repeat(name)))
    if not set(map(type, values)) <= {str, type(None)}:
        values = [value if type(value) is str else None for value in values]
    return pl.Series(name, values, dtype=pl.String())
