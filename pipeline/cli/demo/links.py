"""The cross-platform links in `pmw demo`: market_links landed from the lake's latest markets, and the linked pairs
whose prices parted most on the last day (marts.cross_platform_daily)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, date, datetime

import duckdb
import polars as pl

from pipeline.engine.config import Settings
from pipeline.engine.lake.store import Lake
from pipeline.engine.schema.links import LinkDecision
from pipeline.engine.warehouse.market_links import land_market_links

WIDEST_GAPS_SQL = """
SELECT polymarket_title, kalshi_title, outcome_map, polymarket_close, kalshi_close, gap, confidence
FROM marts.cross_platform_daily
WHERE day = ? AND gap IS NOT NULL
ORDER BY abs(gap) DESC, polymarket_id, kalshi_id
LIMIT 3
"""


def land_links(settings: Settings, lake: Lake, say: Callable[[str], None] = print) -> pl.DataFrame:
    """market_links landed as the asset links/market_links lands it; one line says what it holds."""
    links = land_market_links(lake, settings.market_links_file, datetime.now(UTC))
    decided = dict(links.group_by("decision").len().iter_rows())
    say("\nmarket_links (links.market_links): "
        + ", ".join(f"{decided.get(d.value, 0)} {d.value}" for d in LinkDecision)
        + " pair(s) of Polymarket and Kalshi markets")
    return links


def say_widest_gaps(db: duckdb.DuckDBPyConnection, day: date, say: Callable[[str], None] = print) -> None:
    """The three linked pairs whose closes parted most on the day, in Kalshi's Yes terms."""
    say(f"\nThe three linked pairs whose prices parted most on {day} (marts.cross_platform_daily; closes in "
        "Kalshi's Yes terms):")
    rows = db.execute(WIDEST_GAPS_SQL, [day]).fetchall()
    if not rows:
        say("  none: no linked pair traded on both platforms that day")
    for polymarket, kalshi, outcome_map, p_close, k_close, gap, confidence in rows:
        say(f"  gap {gap * 100:+5.1f} points: Polymarket {p_close:.2f} ({outcome_map}) vs Kalshi {k_close:.2f}, "
            f"confidence {confidence:.2f}")
        say(f"    {polymarket[:70]}\n    {kalshi[:70]}")
