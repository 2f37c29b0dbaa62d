"""market_links landed from the lake's latest markets: one file replaced whole, read by links.market_links."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb
import polars as pl
import pytest

from pipeline.engine.config import ConfigError, Settings
from pipeline.engine.lake.store import Lake
from pipeline.engine.warehouse.market_links import land_market_links, links_views
from tests.support.frames import DAY, table_frame

YES_NO = [{"id": "yes", "name": "Yes"}, {"id": "no", "name": "No"}]
END = datetime(2027, 4, 14, 20, tzinfo=UTC)


def _markets(platform: str, day_offset: int, ids: list[str], titles: list[str]) -> pl.DataFrame:
    n = len(ids)
    return table_frame("markets", platform, DAY + timedelta(days=day_offset), n, {
        "id": ids, "platform_id": ids, "title": titles, "status": ["open"] * n, "market_type": ["binary"] * n,
        "outcomes": [YES_NO] * n, "current_prices": [[]] * n, "category": ["Economics"] * n,
        "resolution_date": [END] * n, "last_synced_at": [datetime(2026, 11, 21, tzinfo=UTC)] * n})


def test_the_latest_titles_are_matched_and_the_view_reads_the_file(tmp_path: Path) -> None:
    lake = Lake(tmp_path / "lake")
    question = "Will CPI inflation year over year be above 3.1% in March 2027?"
    lake.write_partition("markets", "kalshi", DAY, _markets("kalshi", 0, ["KXCPI-T3.1"], [question]))
    lake.write_partition("markets", "polymarket", DAY, _markets("polymarket", 0, ["1"], ["Something else entirely"]))
    lake.write_partition("markets", "polymarket", DAY + timedelta(days=1),
                         _markets("polymarket", 1, ["1"], ["Annual US CPI inflation 3.1% or lower for March 2027?"]))
    with duckdb.connect() as session:
        [view] = links_views(lake)
        session.execute("CREATE SCHEMA links")
        session.execute(view.statement)
        assert session.sql("SELECT count(*) FROM links.market_links").fetchall() == [(0,)]  # before any landing
        land_market_links(lake, None, datetime(2026, 11, 26, tzinfo=UTC))
        rows = session.sql("SELECT polymarket_id, kalshi_id, decision, outcome_map FROM links.market_links").fetchall()
    assert rows == [("1", "KXCPI-T3.1", "linked", "swapped")]


def test_pmw_market_links_may_not_name_a_folder(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=f"PMW_MARKET_LINKS must name a file .*, got the folder {tmp_path}"):
        Settings.from_env(overrides={"PMW_MARKET_LINKS": str(tmp_path)}, credentials=False)
    assert Settings.from_env(overrides={"PMW_MARKET_LINKS": str(tmp_path / "new.csv")},
                             credentials=False).market_links_file == tmp_path / "new.csv"
