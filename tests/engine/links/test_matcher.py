"""The matcher on a handful of markets: a pair in other words and the opposite sense links with its outcomes
swapped; the same topic with another threshold, date or direction does not; the analyst's file beats it."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest

from pipeline.engine.links.matcher import match_markets
from pipeline.engine.links.overrides import OverridesError, read_overrides
from pipeline.engine.schema.links import MARKET_LINKS

NOW = datetime(2026, 11, 26, tzinfo=UTC)
YES_NO = [{"id": "yes", "name": "Yes"}, {"id": "no", "name": "No"}]


def _markets(*rows: tuple[str, str, str, str]) -> pl.DataFrame:
    """(platform, id, title, resolution day) rows, binary Yes/No markets of Economics."""
    return pl.DataFrame(
        [{"platform": p, "id": i, "title": t, "category": "Economics", "market_type": "binary", "outcomes": YES_NO,
          "resolution_date": datetime.fromisoformat(f"{day}T20:00:00+00:00")} for p, i, t, day in rows])


MARKETS = _markets(
    ("kalshi", "KXCPI-27MAR-T3.1", "Will CPI inflation year over year be above 3.1% in March 2027?", "2027-04-14"),
    ("kalshi", "KXCPI-27MAR-T3.3", "Will CPI inflation year over year be above 3.3% in March 2027?", "2027-04-14"),
    ("polymarket", "1", "Annual US CPI inflation 3.1% or lower for March 2027?", "2027-04-15"),
    ("polymarket", "2", "Will annual US CPI inflation exceed 3.1% for April 2027?", "2027-05-14"),
    ("kalshi", "KXFEDMOVE-27MAR18-C25", "Will the Fed cut rates by 25 bps at the March 18, 2027 meeting?",
     "2027-03-18"),
    ("kalshi", "KXFEDMOVE-27MAR18-H25", "Will the Fed hike rates by 25 bps at the March 18, 2027 meeting?",
     "2027-03-18"),
    ("polymarket", "3", "The Federal Reserve to lower interest rates by 25 bps on Mar 18, 2027?", "2027-03-19"),
)


def _decided(links: pl.DataFrame) -> dict[tuple[str, str], tuple[str, str]]:
    return {(p, k): (d, o) for p, k, d, o in links.select("polymarket_id", "kalshi_id", "decision",
                                                        "outcome_map").iter_rows()}


def test_the_same_question_links_with_its_sense_and_decoys_do_not() -> None:
    links = match_markets(MARKETS, read_overrides(None), NOW)
    assert links.schema == MARKET_LINKS.polars_schema
    linked = {pair: o for pair, (d, o) in _decided(links).items() if d == "linked"}
    assert linked == {("1", "KXCPI-27MAR-T3.1"): "swapped", ("3", "KXFEDMOVE-27MAR18-C25"): "same"}


def test_the_analysts_file_beats_the_matcher(tmp_path: Path) -> None:
    file = tmp_path / "links.csv"
    file.write_text("polymarket_id,kalshi_id,verdict,outcome_map\n1,KXCPI-27MAR-T3.1,rejected\n"
                    "2,KXCPI-27MAR-T3.3,confirmed,same\n", encoding="utf-8")
    links = _decided(match_markets(MARKETS, read_overrides(file), NOW))
    assert links[("1", "KXCPI-27MAR-T3.1")] == ("rejected", "swapped")
    assert links[("2", "KXCPI-27MAR-T3.3")] == ("linked", "same")


def test_a_bad_line_of_the_file_is_named(tmp_path: Path) -> None:
    file = tmp_path / "links.csv"
    file.write_text("1,KXCPI-27MAR-T3.1,maybe\n", encoding="utf-8")
    with pytest.raises(OverridesError, match=r"links.csv, line 1: verdict 'maybe', expected confirmed or rejected"):
        read_overrides(file)
