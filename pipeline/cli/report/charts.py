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
    labels = [f"{platform}: {short_title(title)}"
              for platform, title in zip(shown["platform"], shown["title"], strict=True)]
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
    """A candlestick chart of the first outcome's hourly price per market, the busiest first; a line of the hourly
    closes for a market whose history holds closes only (every hour's open, high, low and close alike, as
    Polymarket's price history), which candles would draw flat."""
    figures = []
    for (platform, market_id, title, trades), hours in candles.group_by(
        "platform", "market_id", "title", "trades", maintain_order=True
    ):
        figure = go.Figure(_price_trace(hours, name=str(market_id)))
        figure.update_layout(template=TEMPLATE, height=340, xaxis_rangeslider_visible=False, margin={"t": 40},
                             title=f"{platform} {market_id}: {short_title(str(title))} ({trades} trades)",
                             yaxis_title="price, first outcome")
        figures.append(figure)
    return figures


def _price_trace(hours: pl.DataFrame, name: str) -> go.Candlestick | go.Scatter:
    x, close = hours["hour"].to_list(), hours["close_price"].to_list()
    if _close_only(hours):
        return go.Scatter(x=x, y=close, name=name, mode="lines+markers", line_color=UP)
    return go.Candlestick(x=x, open=hours["open_price"].to_list(), high=hours["high_price"].to_list(),
                          low=hours["low_price"].to_list(), close=close, name=name,
                          increasing_line_color=UP, decreasing_line_color=DOWN)


def _close_only(hours: pl.DataFrame) -> bool:
    prices = [pl.col(f"{side}_price") for side in ("open", "high", "low")]
    return hours.select(pl.all_horizontal(price.eq_missing(pl.col("close_price")) for price in prices).all()).item()


def category_figure(weeks: pl.DataFrame) -> go.Figure:
    """Stacked weekly volume by category, one panel per platform (their currencies differ)."""
    platforms = weeks["platform"].unique(maintain_order=True).to_list()
    figure = make_subplots(rows=1, cols=len(platforms), subplot_titles=platforms)
    categories = sorted(weeks["category"].unique().to_list())
    named: set[str] = set()  # a category is named once in the legend, by its first bar, whichever the panel
    for column, platform in enumerate(platforms, start=1):
        for category in categories:
            rows = weeks.filter((pl.col("platform") == platform) & (pl.col("category") == category))
            if rows.height:
                figure.add_trace(go.Bar(x=rows["week_start"].to_list(), y=rows["volume"].to_list(), name=category,
                                        legendgroup=category, showlegend=category not in named,
                                        marker_color=_colour(categories.index(category))), row=1, col=column)
                named.add(category)
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


def pair_gaps_figure(gaps: pl.DataFrame) -> go.Figure:
    """The gap (Polymarket close - Kalshi close, in Kalshi's Yes terms, points) per day of each pair, one line each."""
    figure = go.Figure()
    for (_polymarket, _kalshi), days in gaps.group_by("polymarket_id", "kalshi_id", maintain_order=True):
        figure.add_trace(go.Scatter(x=days["day"].to_list(), y=(days["gap"] * 100).to_list(), mode="lines+markers",
                                    name=short_title(days["title"][0])))
    figure.add_hline(y=0, line_color="#999")
    figure.update_layout(template=TEMPLATE, height=380, margin={"t": 20},
                         yaxis_title="gap, points (Polymarket - Kalshi)")
    _day_ticks(figure, gaps["day"])
    return figure


def _day_ticks(figure: go.Figure, days: pl.Series, step: int = 1) -> None:
    """Ticks on whole days (`step` apart, or a multiple of it so that at most MOST_TICKS show), labelled as days:
    plotly's own choice on a short span is every few hours."""
    first, last = days.min(), days.max()
    every = step * -(-((last - first).days // step + 1) // MOST_TICKS)  # steps per tick, rounded up
    figure.update_xaxes(type="date", tickformat="%Y-%m-%d", dtick=every * DAY_MS, tick0=first)


def short_title(title: str) -> str:
    """`title` if it fits in TITLE_CHARS, else cut at the last word that fits, with an ellipsis (inside a word
    only when its first word alone does not fit)."""
    if len(title) <= TITLE_CHARS:
        return title
    kept = title[:TITLE_CHARS]  # the ellipsis takes the place of the space (or the character) after the cut
    words = kept.rsplit(" ", 1)[0] if " " in kept else kept[: TITLE_CHARS - 1]
    return words.rstrip(" ,;:-") + "…"


def _colour(index: int) -> str:
    return qualitative.Plotly[index % len(qualitative.Plotly)]
