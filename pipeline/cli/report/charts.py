"""The figures of `pmw report`, one function per chart, from the frames of report_data."""

from __future__ import annotations

import plotly.graph_objects as go
import polars as pl
from plotly.colors import qualitative
from plotly.subplots import make_subplots

TEMPLATE = "plotly_white"
DAY_MS = 86_400_000
MOST_TICKS = 12
TITLE_CHARS = 60
UP, DOWN = "#2e9e5b", "#d1493f"


def platform_daily_figure(daily: pl.DataFrame) -> go.Figure:
    """Volume (bars) and trades (lines) per platform and day, one above the other on a shared day axis."""
    figure = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.08,
                           subplot_titles=("Volume (notional, platform currency)", "Trades"))
    for (platform,), days in daily.group_by("platform", maintain_order=True):
        x = days["day"].to_list()
        figure.add_trace(go.Bar(x=x, y=days["volume"].to_list(), name=f"{platform} volume",
                                legendgroup=str(platform)), row=1, col=1)
        figure.add_trace(go.Scatter(x=x, y=days["trades"].to_list(), name=f"{platform} trades", mode="lines+markers",
                                    legendgroup=str(platform)), row=2, col=1)
    figure.update_layout(template=TEMPLATE, height=560, barmode="group", margin={"t": 40})
    _day_ticks(figure, daily["day"])
    return figure


def movers_figure(movers: pl.DataFrame) -> go.Figure:
    """The last day's movers as horizontal bars of their price change (points of the first outcome's price)."""
    shown = movers.reverse()  # plotly draws the first bar at the bottom: the biggest mover goes on top
    labels = [f"{platform}: {_short(title)}" for platform, title in zip(shown["platform"], shown["title"], strict=True)]
    changes = shown["change"].to_list()
    hover = [f"{o:.2f} → {c:.2f}, {t} trades" for o, c, t in
             zip(shown["open_price"], shown["close_price"], shown["trades"], strict=True)]
    figure = go.Figure(go.Bar(x=changes, y=labels, orientation="h", hovertext=hover,
                              marker_color=[UP if change >= 0 else DOWN for change in changes]))
    figure.update_layout(template=TEMPLATE, height=120 + 32 * len(labels), margin={"t": 20, "l": 20},
                         xaxis_title="price change over the day (first trade to last), first outcome")
    figure.update_yaxes(automargin=True)
    return figure


def candles_figures(candles: pl.DataFrame) -> list[go.Figure]:
    """A candlestick chart of the first outcome's hourly price per market, the busiest first."""
    figures = []
    for (platform, market_id, title, trades), hours in candles.group_by(
        "platform", "market_id", "title", "trades", maintain_order=True
    ):
        figure = go.Figure(go.Candlestick(
            x=hours["hour"].to_list(), open=hours["open_price"].to_list(), high=hours["high_price"].to_list(),
            low=hours["low_price"].to_list(), close=hours["close_price"].to_list(), name=str(market_id),
            increasing_line_color=UP, decreasing_line_color=DOWN,
        ))
        figure.update_layout(template=TEMPLATE, height=340, xaxis_rangeslider_visible=False, margin={"t": 40},
                             title=f"{platform} {market_id}: {_short(str(title))} ({trades} trades)",
                             yaxis_title="price, first outcome")
        figures.append(figure)
    return figures


def category_figure(weeks: pl.DataFrame) -> go.Figure:
    """Stacked weekly volume by category, one panel per platform (their currencies differ)."""
    platforms = weeks["platform"].unique(maintain_order=True).to_list()
    figure = make_subplots(rows=1, cols=len(platforms), subplot_titles=platforms)
    categories = sorted(weeks["category"].unique().to_list())
    for column, platform in enumerate(platforms, start=1):
        for category in categories:
            rows = weeks.filter((pl.col("platform") == platform) & (pl.col("category") == category))
            if rows.height:
                figure.add_trace(go.Bar(x=rows["week_start"].to_list(), y=rows["volume"].to_list(), name=category,
                                        legendgroup=category, showlegend=column == 1,
                                        marker_color=_colour(categories.index(category))), row=1, col=column)
    figure.update_layout(template=TEMPLATE, height=420, barmode="stack", margin={"t": 40})
    figure.update_xaxes(title_text="week starting (Monday, UTC)")
    _day_ticks(figure, weeks["week_start"], step=7)
    return figure


def rejects_figure(rejects: pl.DataFrame) -> go.Figure:
    """Rejected records per day, stacked by table and platform (an unreadable rejects file counts none)."""
    figure = go.Figure()
    for (table, platform), days in rejects.group_by("table", "platform", maintain_order=True):
        figure.add_trace(go.Bar(x=days["day"].to_list(), y=days["rejects"].fill_null(0).to_list(),
                                name=f"{table} {platform}"))
    figure.update_layout(template=TEMPLATE, height=360, barmode="stack", margin={"t": 20},
                         yaxis_title="rejected records")
    _day_ticks(figure, rejects["day"])
    return figure


def _day_ticks(figure: go.Figure, days: pl.Series, step: int = 1) -> None:
    """Ticks on whole days (`step` apart, or a multiple of it so that at most MOST_TICKS show), labelled as days:
    plotly's own choice on a short span is every few hours."""
    first, last = days.min(), days.max()
    every = step * -(-((last - first).days // step + 1) // MOST_TICKS)  # steps per tick, rounded up
    figure.update_xaxes(type="date", tickformat="%Y-%m-%d", dtick=every * DAY_MS, tick0=first)


def _short(title: str) -> str:
    return title if len(title) <= TITLE_CHARS else title[: TITLE_CHARS - 1] + "…"


def _colour(index: int) -> str:
    return qualitative.Plotly[index % len(qualitative.Plotly)]
