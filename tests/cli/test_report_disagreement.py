"""The report's section "Where the platforms disagree": the last day's widest gaps, and the busiest pairs' gaps."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import polars as pl

from pipeline.cli.report.data import ReportData
from pipeline.cli.report.page import render_report

DAY = date(2026, 11, 21)
GAPS = pl.DataFrame({"polymarket_id": ["1"], "kalshi_id": ["KX-A"], "polymarket_title": ["CPI 3.1% or lower?"],
                     "kalshi_title": ["CPI above 3.1%?"], "outcome_map": ["swapped"], "confidence": [0.9],
                     "polymarket_close": [0.7], "kalshi_close": [0.66], "gap": [0.04]})


def _data(widest: pl.DataFrame, pair_gaps: pl.DataFrame) -> ReportData:
    daily = pl.DataFrame({"platform": ["kalshi"], "day": [DAY], "trades": [1], "volume": [1.0]})
    return ReportData(first=DAY, last=DAY, platform_daily=daily, movers=pl.DataFrame(), candles=pl.DataFrame(
        schema=["platform", "market_id", "title", "trades"]), category_volume=pl.DataFrame(),
        rejects=pl.DataFrame(), widest_gaps=widest, pair_gaps=pair_gaps)


def test_the_widest_gaps_are_listed_and_the_busiest_pairs_drawn() -> None:
    pair_gaps = pl.DataFrame({"polymarket_id": ["1", "1"], "kalshi_id": ["KX-A", "KX-A"],
                              "title": ["CPI above 3.1%?"] * 2, "day": [date(2026, 11, 20), DAY], "gap": [0.1, 0.04]})
    page = render_report(_data(GAPS, pair_gaps), Path("warehouse.duckdb"))
    section = page[page.index("<h2>Where the platforms disagree</h2>"):]
    assert "<tr><td>CPI 3.1% or lower?<br>CPI above 3.1%?</td><td>swapped</td><td>0.70</td><td>0.66</td>" \
           "<td>+4.0</td><td>0.90</td></tr>" in section
    assert "id='pair-gaps'" in section


def test_without_a_linked_pair_the_section_says_so() -> None:
    page = render_report(_data(GAPS.clear(), pl.DataFrame()), Path("warehouse.duckdb"))
    assert "No linked pair traded on both platforms in the window." in page
