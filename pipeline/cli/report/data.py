"""What `pmw report` draws, read from the warehouse's marts (read-only) and from the lake's rejects footers."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path

import duckdb
import polars as pl

from pipeline.engine.lake.store import Lake
from pipeline.engine.schema import TABLES
from pipeline.engine.warehouse.builds import builds_line, shown_builds
from pipeline.engine.warehouse.views import connect_read_only, relocate_views

TOP_MOVERS = 10
BUSIEST_PER_PLATFORM = 2
WIDEST_GAPS = 10
BUSIEST_PAIRS = 5

PLATFORM_DAILY_SQL = """
SELECT platform, day, trades, volume FROM marts.platform_daily
WHERE day BETWEEN $first AND $last ORDER BY platform, day
"""
# A mover: a market whose first-outcome price (yes / up / team A) moved most, in absolute points, between the
# first and the last trade of the last day (market_daily's open_price and close_price); ties by volume.
MOVERS_SQL = """
SELECT platform, market_id, coalesce(market_title, market_id) AS title, open_price, close_price,
    close_price - open_price AS change, trades, volume
FROM marts.market_daily
WHERE day = $last AND open_price IS NOT NULL AND close_price IS NOT NULL
ORDER BY abs(change) DESC, volume DESC, platform, market_id
LIMIT $limit
"""
# The busiest markets of each platform: the most trades over the window, among those with hourly candles of their
# first outcome.
CANDLES_SQL = """
WITH candles AS (
    SELECT platform, market_id, hour, open_price, high_price, low_price, close_price
    FROM marts.price_candles_hourly
    WHERE outcome_index = 1 AND CAST(hour AS DATE) BETWEEN $first AND $last
),
busiest AS (
    SELECT platform, market_id, any_value(coalesce(market_title, market_id)) AS title,
        CAST(sum(trades) AS BIGINT) AS window_trades
    FROM marts.market_daily AS d
    WHERE day BETWEEN $first AND $last
        AND EXISTS (SELECT 1 FROM candles AS c WHERE c.platform = d.platform AND c.market_id = d.market_id)
    GROUP BY platform, market_id
    QUALIFY row_number() OVER (PARTITION BY platform ORDER BY window_trades DESC, market_id) <= $per_platform
)
SELECT b.platform, b.market_id, b.title, b.window_trades AS trades,
    c.hour, c.open_price, c.high_price, c.low_price, c.close_price
FROM busiest AS b JOIN candles AS c USING (platform, market_id)
ORDER BY b.platform, b.window_trades DESC, b.market_id, c.hour
"""
# Where the platforms disagree: the linked pairs (marts.cross_platform_daily holds the `linked` ones only, the
# matcher's confident links and the analyst's confirmed pairs) whose closes parted most on the last day, and the
# gap over the window of the busiest linked pairs (volume of both markets).
WIDEST_GAPS_SQL = """
SELECT polymarket_id, kalshi_id, polymarket_title, kalshi_title, outcome_map, confidence,
    polymarket_close, kalshi_close, gap
FROM marts.cross_platform_daily
WHERE day = $last AND gap IS NOT NULL
ORDER BY abs(gap) DESC, polymarket_id, kalshi_id
LIMIT $limit
"""
PAIR_GAPS_SQL = """
WITH busiest AS (
    SELECT polymarket_id, kalshi_id
    FROM marts.cross_platform_daily
    WHERE day BETWEEN $first AND $last
    GROUP BY polymarket_id, kalshi_id
    ORDER BY sum(coalesce(polymarket_volume, 0) + coalesce(kalshi_volume, 0)) DESC, polymarket_id, kalshi_id
    LIMIT $pairs
)
SELECT d.polymarket_id, d.kalshi_id, d.kalshi_title AS title, d.day, d.gap
FROM marts.cross_platform_daily AS d JOIN busiest USING (polymarket_id, kalshi_id)
WHERE d.day BETWEEN $first AND $last AND d.gap IS NOT NULL
ORDER BY d.polymarket_id, d.kalshi_id, d.day
"""
CATEGORY_SQL = """
SELECT platform, category, week_start, volume FROM marts.category_volume
WHERE week_start BETWEEN CAST(date_trunc('week', $first) AS DATE) AND $last
ORDER BY platform, week_start, category
"""


class NoDataError(LookupError):
    """The warehouse has no marts, or nothing in them, to draw."""


@dataclass(frozen=True)
class ReportData:
    first: date
    last: date
    platform_daily: pl.DataFrame
    movers: pl.DataFrame
    candles: pl.DataFrame
    category_volume: pl.DataFrame
    rejects: pl.DataFrame  # table, platform, day, rows, rejects (null: the rejects file does not read)
    widest_gaps: pl.DataFrame  # the last day's linked pairs whose closes parted most
    pair_gaps: pl.DataFrame  # the busiest linked pairs' gap per day
    builds: str = ""  # which build of the models the marts drawn are of (builds.builds_line)


def load_report_data(warehouse_path: Path, lake: Lake, days: int) -> ReportData:
    """The last `days` days of marts.platform_daily, up to its last day (from its first, if fewer). Raises
    NoDataError when there is no warehouse, no marts or no day in them, and WarehouseHeld when the data dir was
    moved and another process holds the warehouse (its views cannot be pointed at this lake)."""
    if not warehouse_path.exists():
        raise NoDataError(f"no warehouse at {warehouse_path}")
    relocate_views(warehouse_path, lake)
    with connect_read_only(warehouse_path, lake) as db:
        db.sql("SET TimeZone = 'UTC'")  # days and hours are UTC, as the marts compute them
        try:
            return _read_window(db, lake, days)
        except duckdb.CatalogException as error:  # the marts were never built (raw views only), or not all
            raise NoDataError(f"a mart is missing: {str(error).splitlines()[0]}") from None


def _read_window(db: duckdb.DuckDBPyConnection, lake: Lake, days: int) -> ReportData:
    [(first_landed, last)] = db.sql("SELECT min(day), max(day) FROM marts.platform_daily").fetchall()
    if last is None:
        raise NoDataError("marts.platform_daily is empty")
    first = max(first_landed, last - timedelta(days=days - 1))
    window = {"first": first, "last": last}
    return ReportData(
        first=first,
        last=last,
        platform_daily=_frame(db, PLATFORM_DAILY_SQL, window),
        movers=_frame(db, MOVERS_SQL, {"last": last, "limit": TOP_MOVERS}),
        candles=_frame(db, CANDLES_SQL, {**window, "per_platform": BUSIEST_PER_PLATFORM}),
        category_volume=_frame(db, CATEGORY_SQL, window),
        rejects=lake_rejects(lake, first, last),
        builds=builds_line(shown_builds(db)),
        widest_gaps=_frame(db, WIDEST_GAPS_SQL, {"last": last, "limit": WIDEST_GAPS}),
        pair_gaps=_frame(db, PAIR_GAPS_SQL, {**window, "pairs": BUSIEST_PAIRS}),
    )


def _frame(db: duckdb.DuckDBPyConnection, sql: str, parameters: dict[str, object]) -> pl.DataFrame:
    return pl.DataFrame(pl.from_arrow(db.sql(sql, params=parameters).to_arrow_table()))


def lake_rejects(lake: Lake, first: date, last: date) -> pl.DataFrame:
    """Per landed partition of the window with rejects: its rows and rejects, both from the Parquet footers
    (no data page is read); rejects is null when the rejects file is there but does not read."""
    found = [
        {"table": table, "platform": platform, "day": day, "rows": lake.row_count(table, platform, day),
         "rejects": rejects}
        for table in TABLES
        for platform, day in lake.partitions(table)
        if first <= day <= last and (rejects := lake.rejects_count(table, platform, day)) != 0
    ]
    schema = {"table": pl.String, "platform": pl.String, "day": pl.Date, "rows": pl.Int64, "rejects": pl.Int64}
    return pl.DataFrame(found, schema=schema)
