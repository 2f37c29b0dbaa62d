"""Which pairs of a Polymarket and a Kalshi market are worth scoring: blocked cheaply, in polars joins.

A pair is a candidate when the two topics share a word that is not everywhere (a word in more than
`COMMON_TOKEN_SHARE` of a platform's markets, and more than `COMMON_TOKEN_FLOOR` of them, blocks nothing) and the
two resolution dates are at most `DATE_WINDOW_DAYS` apart (a market without one is kept: nothing says otherwise).
"""

from __future__ import annotations

import polars as pl

from pipeline.engine.links.features import topic_tokens
from pipeline.engine.schema import Platform

DATE_WINDOW_DAYS = 45
COMMON_TOKEN_SHARE = 0.05
COMMON_TOKEN_FLOOR = 200


def candidate_pairs(features: pl.DataFrame) -> pl.DataFrame:
    """(polymarket_id, kalshi_id, shared_tokens) of the pairs worth scoring, from the features of both platforms'
    markets (columns platform, id, topic, resolution_date)."""
    tokens = _blocking_tokens(topic_tokens(features))
    left = tokens.filter(pl.col("platform") == Platform.POLYMARKET.value).select(polymarket_id="id", token="token")
    right = tokens.filter(pl.col("platform") == Platform.KALSHI.value).select(kalshi_id="id", token="token")
    shared = (left.join(right, on="token").group_by("polymarket_id", "kalshi_id")
              .agg(shared_tokens=pl.len().cast(pl.Int64)))
    ends = features.select("platform", "id", "resolution_date")
    polymarket_end = ends.filter(pl.col("platform") == Platform.POLYMARKET.value).select(
        polymarket_id="id", polymarket_end="resolution_date")
    kalshi_end = ends.filter(pl.col("platform") == Platform.KALSHI.value).select(
        kalshi_id="id", kalshi_end="resolution_date")
    gap = (pl.col("polymarket_end") - pl.col("kalshi_end")).abs()
    return (shared.join(polymarket_end, on="polymarket_id").join(kalshi_end, on="kalshi_id")
            .filter(gap.is_null() | (gap <= pl.duration(days=DATE_WINDOW_DAYS)))
            .select("polymarket_id", "kalshi_id", "shared_tokens"))


def _blocking_tokens(tokens: pl.DataFrame) -> pl.DataFrame:
    """The tokens that block: those not found in too many of a platform's markets."""
    markets = pl.col("id").n_unique().over("platform")
    frequency = pl.len().over("platform", "token")
    limit = pl.max_horizontal(markets * COMMON_TOKEN_SHARE, pl.lit(COMMON_TOKEN_FLOOR))
    return tokens.filter(frequency <= limit)
