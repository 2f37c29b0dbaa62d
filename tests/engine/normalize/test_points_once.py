"""Price points that several answers of a batch hold land once; a repeat with other values is reported, not lost."""

from __future__ import annotations

from datetime import UTC, date, datetime

import polars as pl

from pipeline.engine.normalize.partitions.unified import PointsOnce
from pipeline.engine.normalized import CONFLICTING_REPEAT, Normalized
from pipeline.engine.schema import TABLES

SCHEMA = TABLES["price_history"].polars_schema
NO_REJECTS = pl.DataFrame(schema={"raw": pl.String(), "reason": pl.String(), "_fetched_at": pl.Datetime("us", "UTC")})


def _answer(*points: tuple[int, float]) -> Normalized:
    """An answer of market m's outcome yes: (hour, close) points."""
    rows = [{"platform": "kalshi", "date": date(2026, 11, 20), "market_id": "m", "outcome_id": "yes",
             "timestamp": datetime(2026, 11, 20, hour, tzinfo=UTC), "price": {"close": close},
             "_fetched_at": datetime(2026, 11, 21, tzinfo=UTC)} for hour, close in points]
    return Normalized(pl.DataFrame(rows, schema=SCHEMA), NO_REJECTS)


def test_a_point_two_answers_hold_lands_once_and_a_differing_repeat_is_rejected_as_such() -> None:
    once = PointsOnce()
    first = once.keep(_answer((0, 0.4), (1, 0.5)))
    second = once.keep(_answer((1, 0.5), (2, 0.6), (2, 0.6)))  # the cut's period again, and a repeat in one answer
    third = once.keep(_answer((2, 0.61), (3, 0.7)))  # the same period with another close

    landed = pl.concat([first.rows, second.rows, third.rows])
    assert landed["timestamp"].dt.hour().to_list() == [0, 1, 2, 3]
    assert landed["price"].struct.field("close").to_list() == [0.4, 0.5, 0.6, 0.7]
    assert first.rejects.is_empty() and second.rejects.is_empty()
    assert third.rejects["reason"].to_list() == [CONFLICTING_REPEAT]
    assert '"close":0.61' in third.rejects["raw"][0]
