"""`market_links` from the latest markets of both platforms: blocked candidates, scored, decided one to one, then
overridden by the analyst's file (pipeline/engine/links/overrides.py)."""

from __future__ import annotations

from datetime import datetime

import polars as pl

from pipeline.engine.links.candidates import candidate_pairs
from pipeline.engine.links.features import title_features
from pipeline.engine.links.overrides import Verdict
from pipeline.engine.links.scoring import LINK_CONFIDENCE, UNSURE_FLOOR, score_pairs
from pipeline.engine.schema import Platform
from pipeline.engine.schema.links import MARKET_LINKS, LinkDecision, LinkSource, OutcomeMap

MATCHED_PLATFORMS = (Platform.POLYMARKET.value, Platform.KALSHI.value)


def market_features(markets: pl.DataFrame) -> pl.DataFrame:
    """The matcher's view of markets (columns platform, id, title, category, market_type, outcomes,
    resolution_date): the title's features and the outcomes' structure (`yes/no`, else type and count)."""
    names = (pl.col("outcomes").list.eval(pl.element().struct.field("name").str.to_lowercase())
             .list.sort().list.join("/"))
    structure = (pl.when(names == "no/yes").then(pl.lit("yes/no"))
                 .otherwise(pl.col("market_type") + ":" + pl.col("outcomes").list.len().cast(pl.String)))
    chosen = markets.filter(pl.col("platform").is_in(MATCHED_PLATFORMS)).select(
        "platform", "id", "title", "category", "resolution_date", structure=structure)
    return title_features(chosen)


def match_markets(markets: pl.DataFrame, overrides: pl.DataFrame, now: datetime) -> pl.DataFrame:
    """The rows of `links.market_links` for `markets` (one row per market: its latest), with the analyst's
    `overrides` (overrides.read_overrides) applied, decided at `now`."""
    features = market_features(markets)
    scored = score_pairs(candidate_pairs(features), features)
    best = ((pl.col("confidence").rank("ordinal", descending=True).over("polymarket_id") == 1)
            & (pl.col("confidence").rank("ordinal", descending=True).over("kalshi_id") == 1))
    matched = scored.with_columns(
        decision=pl.when(best & (pl.col("confidence") >= LINK_CONFIDENCE)).then(pl.lit(LinkDecision.LINKED.value))
        .otherwise(pl.lit(LinkDecision.UNSURE.value)),
        source=pl.lit(LinkSource.MATCHER.value),
    ).filter(pl.col("confidence") >= UNSURE_FLOOR)
    titled = _with_titles(_overridden(matched, overrides), markets)
    return titled.with_columns(linked_at=pl.lit(now).dt.cast_time_unit("us").dt.convert_time_zone("UTC")).select(
        [pl.col(c.name).cast(c.dtype) for c in MARKET_LINKS.columns]).sort("polymarket_id", "kalshi_id")


def _overridden(matched: pl.DataFrame, overrides: pl.DataFrame) -> pl.DataFrame:
    """The analyst's pairs replace the matcher's rows of the same pair; a matcher's link sharing a market with a
    confirmed pair becomes unsure."""
    if overrides.is_empty():
        return matched
    keys = ["polymarket_id", "kalshi_id"]
    confirmed = overrides.filter(pl.col("verdict") == Verdict.CONFIRMED.value)
    analyst = (overrides.join(matched, on=keys, how="left", suffix="_matcher").with_columns(
        decision=pl.when(pl.col("verdict") == Verdict.CONFIRMED.value).then(pl.lit(LinkDecision.LINKED.value))
        .otherwise(pl.lit(LinkDecision.REJECTED.value)),
        source=pl.lit(LinkSource.ANALYST.value),
        confidence=pl.when(pl.col("verdict") == Verdict.CONFIRMED.value).then(1.0).otherwise(0.0),
        outcome_map=pl.coalesce("outcome_map", "outcome_map_matcher", pl.lit(OutcomeMap.SAME.value)),
    ).drop("verdict", "outcome_map_matcher"))
    taken = (pl.col("polymarket_id").is_in(confirmed["polymarket_id"].implode())
             | pl.col("kalshi_id").is_in(confirmed["kalshi_id"].implode()))
    rest = (matched.join(overrides.select(keys), on=keys, how="anti")
            .with_columns(decision=pl.when(taken & (pl.col("decision") == LinkDecision.LINKED.value))
                          .then(pl.lit(LinkDecision.UNSURE.value)).otherwise("decision")))
    return pl.concat([rest, analyst.select(rest.columns)], how="vertical_relaxed")


def _with_titles(links: pl.DataFrame, markets: pl.DataFrame) -> pl.DataFrame:
    titles = markets.select("platform", "id", "title")
    for platform in MATCHED_PLATFORMS:
        side = titles.filter(pl.col("platform") == platform).select(
            pl.col("id").alias(f"{platform}_id"), pl.col("title").alias(f"{platform}_title_"))
        links = links.join(side, on=f"{platform}_id", how="left").with_columns(
            pl.coalesce(f"{platform}_title_", f"{platform}_title").alias(f"{platform}_title")
            if f"{platform}_title" in links.columns else pl.col(f"{platform}_title_").alias(f"{platform}_title")
        ).drop(f"{platform}_title_")
    return links
