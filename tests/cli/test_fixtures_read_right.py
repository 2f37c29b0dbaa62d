"""`pmw normalize` on every recorded fixture gives no value the platform's documentation contradicts.

Each file (tests/support/native_cases lists them all, with the entity each response lists; test_native holds
that list to the folder) is normalized by the command, as a user would, and every table it writes is held to:
- the partition checks (pipeline.engine.checks `run_checks`: required columns, key, enums, prices within [0, 1],
  price keys naming outcomes, sizes above 0), but the two that concern a landed partition rather than one
  response: `timestamps_inside_day` (the lake keeps a day's rows; a recording spans many days) and
  `references_partition_markets` (a trades or candles response comes without its markets);
- what the platforms document beyond them (the `INVARIANTS` below): a quote is strictly inside (0, 1) and a bid is
  at most its ask; a market whose result is known (resolved or cancelled) has no book (what Kalshi and Gamma still
  send is the book as it stood at the close); every candle period has a close (a period without trades closes at the
  previous close, Kalshi's `price.previous`); a candle's open and close lie within its low and high; every time is
  UTC, after 2000 and before 2100.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest

from pipeline.cli.main import main
from pipeline.engine.checks import PartitionContext, run_checks
from pipeline.engine.schema import REJECTS_SCHEMA, TABLES, MarketStatus
from tests.support.native_cases import CASES, FIXTURES, Case

NOT_FOR_ONE_RESPONSE = {"timestamps_inside_day", "references_partition_markets"}
EARLIEST, LATEST = datetime(2000, 1, 1, tzinfo=UTC), datetime(2100, 1, 1, tzinfo=UTC)
SETTLED = [MarketStatus.RESOLVED.value, MarketStatus.CANCELLED.value]


def _quotes(frame: pl.DataFrame) -> pl.DataFrame:
    """A market's quotes: one row per outcome of `current_prices`, plus the Yes book of `metadata`."""
    prices = frame.select("id", "status", pl.col("current_prices").alias("p")).explode("p").drop_nulls("p")
    outcome = prices.select("id", "status", bid=pl.col("p").struct.field("bid"), ask=pl.col("p").struct.field("ask"))
    book = frame.select("id", "status", bid=pl.col("metadata").struct.field("best_bid"),
                        ask=pl.col("metadata").struct.field("best_ask"))
    return pl.concat([outcome, book])


def _quotes_inside_and_uncrossed(frame: pl.DataFrame) -> pl.DataFrame:
    quotes = _quotes(frame)
    outside = pl.any_horizontal([(pl.col(c) <= 0) | (pl.col(c) >= 1) for c in ("bid", "ask")])
    return quotes.filter(outside | (pl.col("bid") > pl.col("ask")))


def _no_book_once_settled(frame: pl.DataFrame) -> pl.DataFrame:
    quotes = _quotes(frame)
    return quotes.filter(pl.col("status").is_in(SETTLED) & (pl.col("bid").is_not_null() | pl.col("ask").is_not_null()))


def _every_period_closes(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.filter(pl.col("price").struct.field("close").is_null())


def _candles_within_their_range(frame: pl.DataFrame) -> pl.DataFrame:
    price = pl.col("price").struct
    low, high = price.field("low"), price.field("high")
    outside = pl.any_horizontal([(price.field(f) < low) | (price.field(f) > high) for f in ("open", "close")])
    return frame.filter(outside | (low > high))


def _plausible_utc_times(frame: pl.DataFrame) -> pl.DataFrame:
    times = [name for name, dtype in frame.schema.items() if isinstance(dtype, pl.Datetime) and name != "_fetched_at"]
    assert all(frame.schema[name] == pl.Datetime("us", "UTC") for name in times)
    wrong = pl.any_horizontal([(pl.col(t) < EARLIEST) | (pl.col(t) >= LATEST) for t in times] or [pl.lit(False)])
    return frame.filter(wrong)


Invariant = Callable[[pl.DataFrame], pl.DataFrame]  # the offending rows
INVARIANTS: dict[str, dict[str, Invariant]] = {
    "markets": {"quotes inside (0, 1), bid <= ask": _quotes_inside_and_uncrossed,
                "no book once the result is known": _no_book_once_settled},
    "price_history": {"every period has a close": _every_period_closes,
                      "open and close within low and high": _candles_within_their_range},
}


@pytest.mark.parametrize("case", CASES, ids=[c.path for c in CASES])
def test_no_value_the_documentation_contradicts(case: Case, tmp_path: Path) -> None:
    out = tmp_path / "out.parquet"
    assert main(["normalize", "--platform", case.platform, "--entity", case.entity, str(FIXTURES / case.path),
                 "-o", str(out)]) == 0
    assert not list(tmp_path.glob("*rejects*"))
    landed = {table: tmp_path / ("out.parquet" if table == case.entity else f"out.{table}.parquet")
              for table, count in case.rows.items() if count}
    failures: list[str] = []
    for table, path in landed.items():
        rows = pl.read_parquet(path)
        ctx = PartitionContext(platform=case.platform, day=rows["date"][0])
        failures += [f"{table}: {o.name} ({o.violations}): {o.examples[:2]}"
                     for o in run_checks(table, rows, ctx, pl.DataFrame(schema=REJECTS_SCHEMA))
                     if not o.passed and o.name not in NOT_FOR_ONE_RESPONSE]
        for name, offending in {"times UTC and plausible": _plausible_utc_times, **INVARIANTS.get(table, {})}.items():
            bad = offending(rows)
            if not bad.is_empty():
                failures.append(f"{table}: {name} ({bad.height}): {bad.head(2).to_dicts()}")
    assert not failures, "\n".join(failures)


def test_every_table_the_fixtures_fill_is_held_to_the_checks() -> None:
    filled = {table for case in CASES for table, count in case.rows.items() if count}
    assert filled == set(TABLES)
