"""`pmw report` on a day landed from a small sandbox world, rendered offline in headless Chromium: every chart
drew (its SVG and traces in the DOM, the traces' colours in the screenshot) and the page reported no error."""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import date
from functools import cache
from html import unescape
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from pipeline.cli.main import main
from pipeline.cli.report.charts import DOWN, TITLE_CHARS, UP, candles_figures, short_title
from pipeline.cli.report.data import load_report_data
from pipeline.engine.lake.store import Lake
from pipeline.engine.warehouse.views import ensure_raw_views
from pmw_sandbox import SandboxApp, SandboxConfig, plug
from pmw_sandbox.faults import Faults
from tests.support.browser import render
from tests.support.frames import rejects_frame
from tests.support.png import read_png
from tests.support.world import strict_budget_world

DAY = date(2026, 11, 21)
REJECTED = [("trades", "kalshi", 4), ("markets", "polymarket", 2)]  # (table, platform, rejects) of DAY
PLOTLY_BLUE = "#636efa"  # the first colour of plotly's palette: the first platform's volume bars
PAGE = (1280, 4400)  # CSS pixels: the whole report


@pytest.fixture
def landed(pipeline_env: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """One day of both platforms from a small world, landed and its marts built as a user's day does it (`pmw
    backfill`, which rebuilds the marts without a daemon), and rejects in the lake for two partitions. Returns the
    data dir."""
    world = strict_budget_world(DAY)
    monkeypatch.setattr(plug, "sandbox_app", cache(lambda seed, end, faults, readings, days: SandboxApp(
        SandboxConfig(world=replace(world, seed=seed, end=end, days=days), faults=Faults.parse(faults)))))
    assert main(["backfill", "--platform", "polymarket,kalshi", "--start", DAY.isoformat()]) == 0
    lake = Lake(pipeline_env / "lake")
    for table, platform, count in REJECTED:
        lake.rejects_path(table, platform, DAY).parent.mkdir(parents=True, exist_ok=True)
        rejects_frame(count).write_parquet(lake.rejects_path(table, platform, DAY))
    return pipeline_env


@pytest.mark.slow
def test_the_report_draws_every_chart_offline_without_an_error(landed: Path, tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    page = tmp_path / "report.html"
    assert main(["report", "--days", "7", "-o", str(page)]) == 0
    said = capsys.readouterr().out.strip()
    build = r"\d{8}T\d{6}\.\d{6}Z-[0-9a-f]{4}"
    assert re.fullmatch(rf"pmw report: {DAY} \.\. {DAY}, marts of build {build} -> {page}", said)
    rendered = render(page, tmp_path / "report.png", *PAGE)
    assert rendered.errors == []
    charts = _charts(rendered.dom)
    assert list(charts) == ["platform-daily", "movers", "candles-0", "candles-1", "candles-2", "candles-3",
                            "category-volume", "rejects"]
    lines = {name for name, chart in charts.items() if name.startswith("candles") and "polymarket " in chart}
    assert lines == {"candles-2", "candles-3"}  # Polymarket's close-only histories: lines; Kalshi's: candles
    for name, chart in charts.items():
        assert 'class="main-svg"' in chart, name
        drawn = '<g class="point"><path d="M'  # a bar with its outline
        if name.startswith("candles"):
            drawn = '<path class="js-line" d="M' if name in lines else '<path class="box" d="M'
        assert drawn in chart, name
    assert 'class="trace scatter' in charts["platform-daily"]  # the trades lines
    categories = set(load_report_data(landed / "warehouse.duckdb", Lake(landed / "lake"), 7)
                     .category_volume["category"])
    assert set(_legend(charts["category-volume"])) == categories  # every platform's categories named
    assert "<td>trades</td><td>kalshi</td><td>2026-11-21</td><td>4</td>" in rendered.dom
    assert "pmw status</code> lists them" in rendered.dom
    _assert_drawn(read_png(rendered.screenshot))


def test_no_marts_yet_say_what_to_run_and_exit_1(pipeline_env: Path, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """No warehouse yet, then one with the raw views alone (a backfill's, before any `pmw sql`): one line naming
    the commands that fill it, no page, no traceback."""
    page = tmp_path / "report.html"
    assert main(["report", "-o", str(page)]) == 1
    ensure_raw_views(pipeline_env / "warehouse.duckdb", Lake(pipeline_env / "lake"))
    assert main(["report", "-o", str(page)]) == 1
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 2 and all("run `pmw demo`, or `pmw backfill` then `pmw sql`, first" in line for line in lines)
    assert "no warehouse" in lines[0] and "a mart is missing" in lines[1]
    assert not page.exists()


def test_titles_are_cut_at_a_word_with_an_ellipsis() -> None:
    title = "Will the Federal Reserve announce an emergency interest rate cut before the December meeting?"
    cut = short_title(title)
    assert cut == "Will the Federal Reserve announce an emergency interest…"
    assert len(cut) <= TITLE_CHARS and title.startswith(cut[:-1]) and title[len(cut) - 1] == " "
    assert short_title("A short title") == "A short title"
    assert short_title("x" * 80) == "x" * (TITLE_CHARS - 1) + "…"  # one long word: cut inside it, no other way


def test_close_only_histories_are_drawn_as_lines_the_others_as_candles() -> None:
    hours = [date(2026, 11, 21)] * 2
    candles = pl.DataFrame({
        "platform": ["polymarket"] * 2 + ["kalshi"] * 2, "market_id": ["p1", "p1", "k1", "k1"],
        "title": ["P", "P", "K", "K"], "trades": [5, 5, 9, 9], "hour": hours * 2,
        "open_price": [0.4, 0.5, 0.4, 0.5], "high_price": [0.4, 0.5, 0.6, 0.7],
        "low_price": [0.4, 0.5, 0.3, 0.4], "close_price": [0.4, 0.5, 0.5, 0.6],
    })
    close_only, candled = candles_figures(candles)
    assert [trace.type for trace in close_only.data] == ["scatter"]
    assert list(close_only.data[0].y) == [0.4, 0.5]
    assert [trace.type for trace in candled.data] == ["candlestick"]


def _legend(chart: str) -> list[str]:
    """The labels of a rendered chart's legend."""
    return [unescape(label) for label in re.findall(r'<text class="legendtext"[^>]*>([^<]*)</text>', chart)]


def _charts(dom: str) -> dict[str, str]:
    """Each chart's HTML by its id, in page order."""
    parts = re.split(r'<div class="chart" id="([\w-]+)">', dom)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def _assert_drawn(pixels: np.ndarray) -> None:
    """The screenshot holds the colours of the traces (the first platform's volume bars, the movers' rising and
    falling bars) and is far from one flat colour."""
    rgb = pixels[..., :3].astype(np.uint32)
    colours = set(np.unique(rgb[..., 0] << 16 | rgb[..., 1] << 8 | rgb[..., 2]).tolist())  # as 0xRRGGBB
    for colour in (UP, DOWN, PLOTLY_BLUE):
        assert int(colour[1:], 16) in colours, colour
    assert len(colours) > 100
