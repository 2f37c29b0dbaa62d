"""Rows belong to the market the pipeline asked for, not to whatever market id the server put on them.

The spec does not say which id the `market_id` of a trade or the `marketId` of a price point carries: a server
may send the unified id, the platform's id (a Polymarket condition id, a numeric id), or nothing. The pipeline
knows which markets each request asked for, so it attributes every row to one of them:

- an answer about one market (trades are asked for market by market) belongs to it whole (`owned_by`, which
  the unified normalizer applies record by record, and `attribute` for a whole answer);
- a row of an answer about several markets (price history, 10 markets a call) belongs to the requested market
  that its id names (as the unified id, the platform's id or the condition id), or else to the one that owns
  its outcome, when exactly one requested market does. A row that neither tells apart stays unattributed,
  and the caller asks again for fewer markets.

`market_id` then holds the partition's id of the market; `_served_market_id` keeps what the server said when
it differed, for an analyst to see. A trade's outcome given by id is written as the outcome's name.
"""

from __future__ import annotations

import polars as pl

from pipeline.engine.normalized import Normalized
from pipeline.engine.schema import SERVED_MARKET_ID

MARKET = "market_id"
SERVED = SERVED_MARKET_ID.name


def owned_by(rows: pl.DataFrame, owner: pl.Expr | pl.Series) -> pl.DataFrame:
    """`rows` (as served: `market_id` is what the server said) belonging to `owner`, a market id per row."""
    served = pl.col(MARKET)
    owner = owner if isinstance(owner, pl.Expr) else pl.lit(owner)
    return rows.with_columns(owner.alias(MARKET), pl.when(served != owner).then(served).alias(SERVED))


def attribute(result: Normalized, markets: pl.DataFrame) -> tuple[Normalized, int]:
    """`result`'s rows attributed to the requested `markets` (rows of the `markets` table), and how many rows
    could not be (they keep a null `market_id`: ask again for fewer markets)."""
    rows = result.rows
    if markets.height == 1:
        rows = owned_by(rows, pl.lit(markets["id"][0], dtype=pl.String()))
    else:
        rows = owned_by(rows, pl.coalesce(_by_id(pl.col(MARKET), markets), *_by_outcome(rows, markets)))
    if "outcome" in rows.columns and "outcomes" in markets.columns:
        rows = with_outcome_names(rows, outcome_names(markets))
    return Normalized(rows, result.rejects), rows[MARKET].null_count()


def _by_id(served: pl.Expr, markets: pl.DataFrame) -> pl.Expr:
    """The requested market a served id names, as any of the ids a market is known by."""
    known = [pl.col("id"), pl.col("platform_id")]
    if "metadata" in markets.columns:
        known.append(pl.col("metadata").struct.field("condition_id"))
    aliases = (
        markets.select(pl.concat_list(known).alias("alias"), pl.col("id"))
        .explode("alias")
        .drop_nulls()
        .unique()
        .filter(pl.col("alias").is_unique())  # an id two requested markets share tells nothing
    )
    return served.replace_strict(aliases["alias"], aliases["id"], default=None, return_dtype=pl.String())


def _by_outcome(rows: pl.DataFrame, markets: pl.DataFrame) -> list[pl.Expr]:
    """The requested market owning a row's outcome id, where exactly one does."""
    if "outcome_id" not in rows.columns:
        return []
    owners = (
        markets.select(pl.col("outcomes").list.eval(pl.element().struct.field("id")).alias("outcome"), pl.col("id"))
        .explode("outcome")
        .drop_nulls()
        .unique()
        .filter(pl.col("outcome").is_unique())
    )
    return [pl.col("outcome_id").replace_strict(owners["outcome"], owners["id"], default=None,
                                                return_dtype=pl.String())]


def outcome_names(markets: pl.DataFrame) -> pl.DataFrame:
    """Per market, the outcome ids that are none of its outcomes' names, with their names (for trades whose
    server gave the outcome's id)."""
    outcomes = markets.select(pl.col("id").alias(MARKET), pl.col("outcomes")).explode("outcomes").unnest("outcomes")
    names = outcomes.group_by(MARKET).agg(pl.col("name").alias("names"))
    return (outcomes.join(names, on=MARKET).filter(~pl.col("id").is_in(pl.col("names")))
            .select(MARKET, pl.col("id").alias("outcome"), pl.col("name").alias("outcome_name")))


def with_outcome_names(rows: pl.DataFrame, names: pl.DataFrame) -> pl.DataFrame:
    """Trades whose outcome is an outcome id of their market, with the outcome's name instead (`names`: what
    `outcome_names` made of the markets)."""
    named = rows.join(names, on=[MARKET, "outcome"], how="left", maintain_order="left")
    return named.with_columns(pl.coalesce("outcome_name", "outcome").alias("outcome")).drop("outcome_name")
