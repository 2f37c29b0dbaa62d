"""`pmw links`: the unsure candidates with the lines that settle them, and those lines appended to the file."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import polars as pl
import pytest

from pipeline.cli.common.failures import CommandError
from pipeline.cli.links import append_verdicts, list_unsure
from pipeline.engine.config import Settings
from pipeline.engine.links.matcher import match_markets
from pipeline.engine.links.overrides import Verdict, read_overrides
from tests.engine.links.test_matcher import MARKETS, NOW

LINKS = match_markets(MARKETS, read_overrides(None), NOW).with_columns(decision=pl.lit("unsure"))


def test_the_unsure_candidates_are_listed_with_the_lines_that_settle_them() -> None:
    said: list[str] = []
    list_unsure(LINKS, limit=1, say=said.append)
    text = "\n".join(said)
    assert "0 pair(s) linked" in text
    assert "      3,KXFEDMOVE-27MAR18-C25,confirmed,same\n      3,KXFEDMOVE-27MAR18-C25,rejected,same" in text
    assert "more (--limit)" in text


def test_verdicts_are_appended_to_the_analysts_file_which_reads_them_back(tmp_path: Path) -> None:
    file = tmp_path / "links.csv"
    settings = replace(Settings(), market_links_file=file)
    append_verdicts(settings, LINKS, [("1,KXCPI-27MAR-T3.1", Verdict.REJECTED)], say=lambda _: None)
    append_verdicts(settings, LINKS, [("3,KXFEDMOVE-27MAR18-C25", Verdict.CONFIRMED)], say=lambda _: None)
    assert read_overrides(file).rows() == [("1", "KXCPI-27MAR-T3.1", "rejected", "swapped"),
                                           ("3", "KXFEDMOVE-27MAR18-C25", "confirmed", "same")]
    with pytest.raises(CommandError, match="'9,KX' is not a pair of market_links"):
        append_verdicts(settings, LINKS, [("9,KX", Verdict.CONFIRMED)], say=lambda _: None)
