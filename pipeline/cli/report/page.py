"""`pmw report`'s page: the marts as pictures, in one HTML file that opens without a network.

plotly draws the charts; its JavaScript is written into the page once (inline), so the file needs nothing else.
The warehouse is opened read-only; the data-quality panel reads the lake's rejects from their Parquet footers.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import plotly.graph_objects as go
import polars as pl
from plotly.offline import get_plotlyjs

from pipeline.cli.common.failures import FAILED, CommandError
from pipeline.cli.report.charts import (
    candles_figures,
    category_figure,
    movers_figure,
    pair_gaps_figure,
    platform_daily_figure,
    rejects_figure,
)
from pipeline.cli.report.data import (
    BUSIEST_PAIRS,
    BUSIEST_PER_PLATFORM,
    TOP_MOVERS,
    NoDataError,
    ReportData,
    load_report_data,
)
from pipeline.engine.config import Settings
from pipeline.engine.lake.store import Lake
from pipeline.engine.warehouse.views import WarehouseHeld

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 1200px; color: #222; }
h1 { margin-bottom: 0.2rem; } h2 { margin-top: 2.5rem; border-bottom: 1px solid #ddd; }
p.note { color: #555; } table { border-collapse: collapse; } td, th { padding: 0.2rem 0.8rem; text-align: right; }
th { border-bottom: 1px solid #aaa; } td:first-child, th:first-child { text-align: left; }
"""
CONFIG = {"displaylogo": False, "responsive": True}


def run_report(settings: Settings, days: int, output: Path, say: Callable[[str], None] = print) -> None:
    """Write the report of the last `days` days of the marts to `output`; CommandError (exit 1) saying what to run
    when the warehouse has nothing to draw yet, or why it cannot be read."""
    try:
        data = load_report_data(settings.warehouse_path, Lake.of(settings), days)
    except NoDataError as error:
        raise CommandError(f"nothing to draw ({error}): run `pmw demo`, or `pmw backfill` then `pmw sql`, first",
                           FAILED) from None
    except WarehouseHeld as error:
        raise CommandError(str(error), FAILED) from None
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(render_report(data, settings.warehouse_path), encoding="utf-8")
    say(f"pmw report: {data.first} .. {data.last}, marts of {data.builds} -> {output}")


def render_report(data: ReportData, warehouse_path: Path) -> str:
    """The whole page: plotly.js inline in the head, then a section per chart."""
    sections = [
        _section("Daily volume and trades per platform", "From marts.platform_daily.",
                 [("platform-daily", platform_daily_figure(data.platform_daily))], empty=""),
        _movers_section(data),
        _section(f"Hourly candles of the busiest markets ({BUSIEST_PER_PLATFORM} per platform)",
                 "The most traded markets of each platform over the window (marts.market_daily), with the hourly "
                 "candles of their first outcome's price (marts.price_candles_hourly); a line of the hourly closes "
                 "where the history holds closes only (Polymarket's).",
                 [(f"candles-{n}", figure) for n, figure in enumerate(candles_figures(data.candles))],
                 empty="No price history in the window."),
        _section("Volume by category and week", "From marts.category_volume; notional in each platform's currency.",
                 [("category-volume", category_figure(data.category_volume))] if data.category_volume.height else [],
                 empty="No trades in the window."),
        _disagreement_section(data),
        _quality_section(data.rejects),
    ]
    generated = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'><title>pm-warehouse report</title>"
        f"<style>{STYLE}</style><script>{get_plotlyjs()}</script></head><body>"
        f"<h1>pm-warehouse report</h1><p class='note'>Days {data.first} .. {data.last} (UTC) of "
        f"{html.escape(str(warehouse_path))}, marts of {html.escape(data.builds)}; generated {generated} by "
        "<code>pmw report</code>.</p>"
        + "".join(sections) + "</body></html>\n"
    )


def _movers_section(data: ReportData) -> str:
    explanation = (f"The {TOP_MOVERS} markets whose first-outcome price (yes / up / team A) moved most on {data.last}, "
                   "in absolute points, from the day's first trade to its last (open_price and close_price of "
                   "marts.market_daily); green rose, red fell.")
    charts = [("movers", movers_figure(data.movers))] if data.movers.height else []
    return _section(f"Top movers of {data.last}", explanation, charts, empty="No first-outcome trade that day.")


def _disagreement_section(data: ReportData) -> str:
    explanation = (f"Markets listed on both platforms (links.market_links, linked pairs only) whose closes parted most "
                   f"on {data.last}, both in Kalshi's Yes terms (a <code>swapped</code> pair's Polymarket close is 1 - "
                   f"its Yes price), from marts.cross_platform_daily; then the gap per day of the {BUSIEST_PAIRS} "
                   "busiest linked pairs (volume of both markets over the window).")
    charts = [("pair-gaps", pair_gaps_figure(data.pair_gaps))] if data.pair_gaps.height else []
    rows = "".join(
        f"<tr><td>{html.escape(p_title)}<br>{html.escape(k_title)}</td><td>{outcome_map}</td>"
        f"<td>{p_close:.2f}</td><td>{k_close:.2f}</td><td>{gap * 100:+.1f}</td><td>{confidence:.2f}</td></tr>"
        for p_title, k_title, outcome_map, p_close, k_close, gap, confidence in data.widest_gaps.select(
            "polymarket_title", "kalshi_title", "outcome_map", "polymarket_close", "kalshi_close", "gap",
            "confidence").iter_rows()
    )
    table = ("<table><tr><th>Polymarket / Kalshi</th><th>outcomes</th><th>Polymarket</th><th>Kalshi</th>"
             f"<th>gap (points)</th><th>confidence</th></tr>{rows}</table>") if rows else ""
    return _section("Where the platforms disagree", explanation, charts, after=table,
                    empty="" if rows else "No linked pair traded on both platforms in the window.")


def _quality_section(rejects: pl.DataFrame) -> str:
    explanation = ("Records the normalizer rejected, per table, platform and day, counted from the footers of the "
                   "lake's _rejects files. Incomplete partitions and failed checks are recorded by Dagster: "
                   "<code>pmw status</code> lists them.")
    charts = [("rejects", rejects_figure(rejects))] if rejects.height else []
    table = _rejects_table(rejects) if rejects.height else ""
    return _section("Data quality", explanation, charts, empty="No rejects in the window.", after=table)


def _rejects_table(rejects: pl.DataFrame) -> str:
    rows = "".join(
        f"<tr><td>{html.escape(table)}</td><td>{html.escape(platform)}</td><td>{day}</td>"
        f"<td>{'unreadable' if count is None else count}</td><td>{'' if rows is None else rows}</td></tr>"
        for table, platform, day, rows, count in rejects.sort("day", "table", "platform")
        .select("table", "platform", "day", "rows", "rejects").iter_rows()
    )
    return ("<table><tr><th>table</th><th>platform</th><th>day</th><th>rejects</th><th>rows landed</th></tr>"
            f"{rows}</table>")


def _section(title: str, explanation: str, charts: list[tuple[str, go.Figure]], empty: str, after: str = "") -> str:
    """A titled section of the page: its charts, or `empty` without any; `after` is HTML that follows them."""
    drawn = "".join(
        f"<div class='chart' id='{name}'>"
        + figure.to_html(full_html=False, include_plotlyjs=False, div_id=f"{name}-plot", config=CONFIG)
        + "</div>"
        for name, figure in charts
    )
    return (f"<section><h2>{html.escape(title)}</h2><p class='note'>{explanation}</p>"
            f"{drawn or f'<p>{html.escape(empty)}</p>'}{after}</section>")
