"""`links.market_links`: pairs of a Polymarket and a Kalshi market that resolve on the same question.

Not a table of the API: the matcher (pipeline/engine/links/) derives it from the latest markets of both platforms,
an analyst's file of confirmed and rejected pairs (PMW_MARKET_LINKS) overrides it, and it lands as one Parquet file
beside the lake's tables, read by the warehouse's view `links.market_links`.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

import polars as pl

from pipeline.engine.schema.core import UTC_TIMESTAMP, Column


class OutcomeMap(StrEnum):
    """How the two markets' outcomes correspond: Yes is Yes (`same`), or Kalshi's Yes is Polymarket's No."""

    SAME = "same"
    SWAPPED = "swapped"


class LinkDecision(StrEnum):
    """`linked`: the same question (the marts use these); `unsure`: for an analyst to confirm or reject
    (`pmw links`); `rejected`: an analyst said they differ."""

    LINKED = "linked"
    UNSURE = "unsure"
    REJECTED = "rejected"


class LinkSource(StrEnum):
    MATCHER = "matcher"
    ANALYST = "analyst"


@dataclass(frozen=True)
class DerivedTable:
    """A table the pipeline derives rather than lands from an API: its columns, key and documentation."""

    schema: str
    name: str
    columns: tuple[Column, ...]
    primary_key: tuple[str, ...]
    doc: str

    @property
    def polars_schema(self) -> pl.Schema:
        return pl.Schema({c.name: c.dtype for c in self.columns})

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)


def _column(name: str, dtype: pl.DataType, doc: str, required: bool = False,
            enum: tuple[str, ...] | None = None) -> Column:
    return Column(name, dtype, required, enum, doc)


MARKET_LINKS = DerivedTable(
    schema="links",
    name="market_links",
    primary_key=("polymarket_id", "kalshi_id"),
    doc=(
        "One row per candidate pair of a Polymarket and a Kalshi market that the matcher found alike enough to keep "
        "(confidence at least the unsure floor), or that an analyst named in PMW_MARKET_LINKS. How a link is "
        "decided: candidates share topic words and resolve within the date window; a pair whose thresholds, dates "
        "named in the titles, names (each title naming someone the other does not), move direction (a cut against "
        "a hike) or outcome structure differ is vetoed; the others score their topic similarity (rapidfuzz "
        "token-set and token-sort ratios of the titles without dates, numbers and direction words), resolution-date "
        "gap, an anchor (the same numbers, dates or names), category and direction; a market keeps at most one link, "
        "its best. `confidence` >= 0.8 is `linked`, >= 0.55 `unsure`. How to override it: a line `polymarket_id,"
        "kalshi_id,confirmed[,outcome_map]` or `...,rejected` in the PMW_MARKET_LINKS file beats the matcher "
        "(`pmw links` writes those lines)."
    ),
    columns=(
        _column("polymarket_id", pl.String(), "the Polymarket market (`markets.id`)", True),
        _column("kalshi_id", pl.String(), "the Kalshi market (`markets.id`, its ticker)", True),
        _column("polymarket_title", pl.String(), "its title, as last landed"),
        _column("kalshi_title", pl.String(), "its title, as last landed"),
        _column("decision", pl.String(), "what the pair is taken for", True, tuple(LinkDecision)),
        _column("source", pl.String(), "who decided: the matcher or the analyst's file", True, tuple(LinkSource)),
        _column("outcome_map", pl.String(), "Kalshi's Yes is Polymarket's Yes (`same`) or its No (`swapped`): "
                "opposite senses of one threshold (above against at or below)", True, tuple(OutcomeMap)),
        _column("confidence", pl.Float64(), "0..1, the matcher's score (1 for an analyst's confirmation, 0 for a "
                "rejection)", True),
        _column("title_similarity", pl.Float64(), "0..1, the topics' token-set ratio"),
        _column("polymarket_numbers", pl.List(pl.Float64()), "the thresholds or numbers of the Polymarket title "
                "(percent points; bps as percent points; $ amounts as numbers)"),
        _column("kalshi_numbers", pl.List(pl.Float64()), "the same of the Kalshi title"),
        _column("numbers_match", pl.Boolean(), "the two titles name the same numbers"),
        _column("polymarket_direction", pl.String(), "above / below / range (a level), up / down (a move)"),
        _column("kalshi_direction", pl.String(), "the same of the Kalshi title"),
        _column("direction_agrees", pl.Boolean(), "the senses are compatible (null when a title has none)"),
        _column("dates_match", pl.Boolean(), "the dates the titles name agree (null when one names none)"),
        _column("names_match", pl.Boolean(), "false when each title names someone or something (a capitalised "
                "word) the other does not: another nominee, team or country"),
        _column("resolution_gap_days", pl.Float64(), "days between the two resolution dates"),
        _column("structure_match", pl.Boolean(), "same market type and number of outcomes"),
        _column("category_match", pl.Boolean(), "same category, case aside (null when one has none)"),
        _column("linked_at", UTC_TIMESTAMP, "when this row was decided", True),
    ),
)
