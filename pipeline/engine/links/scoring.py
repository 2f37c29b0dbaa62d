"""The evidence of a candidate pair, its confidence and its outcome map, in polars (the title similarity in
rapidfuzz, which scores the whole column of pairs in C).

A pair is vetoed (its confidence cut to a quarter) when the titles name other numbers, other dates, other people
or things, incompatible directions (a cut against a hike, a range against a threshold) or the markets' outcomes
differ in structure (Yes/No against named outcomes or another count). Otherwise it scores its topic similarity
(50%), the gap between its resolution dates (15%: full up to 2 days apart, none past 32), an anchor (15%: the same
numbers, dates or names named), its category (10%) and a known direction (10%). Opposite senses of one threshold
(above against at or below) are the same question with the outcomes swapped.
"""

from __future__ import annotations

import polars as pl
from rapidfuzz import fuzz
from rapidfuzz.process import cpdist

from pipeline.engine.schema.links import OutcomeMap

LINK_CONFIDENCE = 0.8  # a pair at least this confident is linked
UNSURE_FLOOR = 0.55  # below it a pair is not kept; between the two it is left to the analyst (`pmw links`)
VETO_FACTOR = 0.25
_LEVELS = ("above", "below")
_MOVES = ("up", "down")


def score_pairs(pairs: pl.DataFrame, features: pl.DataFrame) -> pl.DataFrame:
    """The candidate `pairs` (polymarket_id, kalshi_id) with both sides' features (prefixed `polymarket_` and
    `kalshi_`), the evidence columns of `links.market_links`, `confidence` and `outcome_map`."""
    joined = (pairs.join(_side(features, "polymarket"), on="polymarket_id")
              .join(_side(features, "kalshi"), on="kalshi_id"))
    similarity = cpdist(joined["polymarket_topic"].to_list(), joined["kalshi_topic"].to_list(),
                        scorer=_topic_ratio, workers=1) if joined.height else []
    p, k = "polymarket_", "kalshi_"
    gap_days = (pl.col(f"{p}resolution_date") - pl.col(f"{k}resolution_date")).abs().dt.total_seconds() / 86_400
    evidence = joined.with_columns(
        title_similarity=pl.Series(similarity, dtype=pl.Float64) / 100,
        numbers_match=pl.col(f"{p}numbers") == pl.col(f"{k}numbers"),
        direction_agrees=_direction_agrees(pl.col(f"{p}direction"), pl.col(f"{k}direction")),
        dates_match=_dates_match(),
        names_match=_names_match(),
        resolution_gap_days=gap_days,
        structure_match=pl.col(f"{p}structure") == pl.col(f"{k}structure"),
        category_match=pl.col(f"{p}category").str.to_lowercase() == pl.col(f"{k}category").str.to_lowercase(),
        outcome_map=pl.when(pl.col(f"{p}direction").is_in(_LEVELS) & pl.col(f"{k}direction").is_in(_LEVELS)
                            & (pl.col(f"{p}direction") != pl.col(f"{k}direction")))
        .then(pl.lit(OutcomeMap.SWAPPED.value)).otherwise(pl.lit(OutcomeMap.SAME.value)),
    )
    veto = (~pl.col("numbers_match") | ~pl.col("direction_agrees").fill_null(True) | ~pl.col("names_match")
            | ~pl.col("dates_match").fill_null(True) | ~pl.col("structure_match"))
    date_score = (1 - (pl.col("resolution_gap_days") - 2).clip(0, None) / 30).clip(0, 1).fill_null(0.5)
    anchors = pl.max_horizontal(
        pl.col("numbers_match") & (pl.col("polymarket_numbers").list.len() > 0), pl.col("dates_match").fill_null(False),
        pl.col("names_match") & (pl.col("polymarket_names").list.len() > 0)).cast(pl.Float64)
    score = (0.5 * pl.col("title_similarity") + 0.15 * date_score + 0.15 * anchors
             + 0.1 * _credit(pl.col("category_match")) + 0.1 * _credit(pl.col("direction_agrees")))
    return evidence.with_columns(confidence=pl.when(veto).then(score * VETO_FACTOR).otherwise(score))


def _topic_ratio(left: str, right: str, **kwargs: object) -> float:
    """The mean of rapidfuzz's token-set ratio (a topic worded with fewer words) and token-sort ratio (the words
    each adds count against it)."""
    return (fuzz.token_set_ratio(left, right) + fuzz.token_sort_ratio(left, right)) / 2


def _side(features: pl.DataFrame, platform: str) -> pl.DataFrame:
    return (features.filter(pl.col("platform") == platform).drop("platform")
            .rename(lambda name: f"{platform}_{name}"))


def _credit(agrees: pl.Expr) -> pl.Expr:
    return pl.when(agrees).then(1.0).when(agrees.is_null()).then(0.5).otherwise(0.0)


def _direction_agrees(left: pl.Expr, right: pl.Expr) -> pl.Expr:
    """Null when a title has no direction; a level's above and below agree (the outcomes swap); a move must go the
    same way; a range only with a range."""
    both_levels = left.is_in(_LEVELS) & right.is_in(_LEVELS)
    both_moves = left.is_in(_MOVES) & right.is_in(_MOVES)
    return (pl.when(left.is_null() | right.is_null()).then(None)
            .when(both_levels).then(True)
            .when(both_moves).then(left == right)
            .otherwise(left == right))


def _names_match() -> pl.Expr:
    """False when each title names someone or something the other does not (Kevin Warsh against Kevin Hassett):
    another entity; one title naming more than the other (`US CPI` against `CPI`) is not enough."""
    p_only = pl.col("polymarket_names").list.set_difference(pl.col("kalshi_words")).list.len() > 0
    k_only = pl.col("kalshi_names").list.set_difference(pl.col("polymarket_words")).list.len() > 0
    return ~(p_only & k_only)


def _dates_match() -> pl.Expr:
    """False when at some precision (year, month, day) both titles name dates and not the same ones; True when
    they name the same at every precision both name; null when they share no precision."""
    compared = [(pl.col(f"polymarket_{unit}"), pl.col(f"kalshi_{unit}")) for unit in ("years", "months", "days")]
    comparable = [(left.list.len() > 0) & (right.list.len() > 0) for left, right in compared]
    differs = pl.any_horizontal([c & (left != right) for c, (left, right) in zip(comparable, compared, strict=True)])
    return pl.when(differs).then(False).when(pl.any_horizontal(comparable)).then(True).otherwise(None)
