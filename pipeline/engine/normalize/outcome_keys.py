"""The keys of a market's maps "from outcome key" (`current_prices`, `price_24h_changes`, `price_7d_changes`,
`last_trades`) written as the outcome's id, whichever key the server used.

The spec calls the key an "outcome key" and shows none: a server may key the maps by the outcome's id (the
sandbox's default) or by its name (`"Yes"`/`"No"` on Kalshi, `"Up"`/`"Down"` on Polymarket). The warehouse joins
them to the market's outcomes by id (`staging.stg_market_outcomes`), so each key is matched to the market's
outcomes by id, else by name (a name two outcomes of the market share matches neither), and stored as that
outcome's id. A key that matches no outcome either way is kept as sent, never dropped: the entry still holds the
server's price, and the markets check `price_keys_name_outcomes` reports it (rejecting the market instead would
lose its trades and price history with it).
"""

from __future__ import annotations

import polars as pl

from pipeline.engine.schema import OUTCOME_MAPS

_ROW, _KEY, _OUTCOME, _RANK = "_row", "_key", "_outcome_id", "_rank"


def keyed_by_outcome_id(markets: pl.DataFrame) -> pl.DataFrame:
    """`markets` (rows of the `markets` table) with every key of their outcome maps that names an outcome by
    its name replaced by that outcome's id; entries, their order, null and empty maps otherwise as they were."""
    if markets.is_empty():
        return markets
    keyed_by_name = [column for column, names in markets.select(_keys_not_ids(c) for c in OUTCOME_MAPS).row(0,
                     named=True).items() if names]
    if not keyed_by_name:  # every key already an outcome id of its market (the usual case): nothing to match
        return markets
    indexed = markets.with_row_index(_ROW)
    lookup = _outcome_lookup(indexed)
    return markets.with_columns(_rekeyed(indexed, column, lookup) for column in keyed_by_name)


def _keys_not_ids(column: str) -> pl.Expr:
    """How many keys of the map column, over all rows, are not an id of their row's outcomes (a row without
    outcomes: all its keys)."""
    keys = pl.col(column).list.eval(pl.element().struct.field("key"))
    ids = pl.col("outcomes").list.eval(pl.element().struct.field("id"))
    return keys.list.set_difference(ids).list.len().fill_null(keys.list.len()).fill_null(0).sum().alias(column)


def _outcome_lookup(indexed: pl.DataFrame) -> pl.DataFrame:
    """Per market row, each key that names one of its outcomes (its id, else a name no other outcome shares),
    with that outcome's id."""
    outcome = pl.col("outcomes")
    outcomes = indexed.select(_ROW, outcome).explode("outcomes").select(
        _ROW, outcome.struct.field("id").alias("id"), outcome.struct.field("name").alias("name")
    ).drop_nulls("id")
    by_id = outcomes.select(_ROW, pl.col("id").alias(_KEY), pl.col("id").alias(_OUTCOME), pl.lit(0).alias(_RANK))
    by_name = outcomes.filter(pl.len().over(_ROW, "name") == 1).drop_nulls("name").select(
        _ROW, pl.col("name").alias(_KEY), pl.col("id").alias(_OUTCOME), pl.lit(1).alias(_RANK)
    )
    return pl.concat([by_id, by_name]).sort(_ROW, _RANK).unique([_ROW, _KEY], keep="first").drop(_RANK)


def _rekeyed(indexed: pl.DataFrame, column: str, lookup: pl.DataFrame) -> pl.Series:
    """The map column with its keys matched by `lookup`, as a Series aligned with `indexed`'s rows."""
    original = indexed[column]
    entries = indexed.select(_ROW, pl.col(column)).explode(column).drop_nulls(column)  # maps with entries only
    key = pl.col(column).struct.field("key")
    matched = entries.with_columns(key.alias(_KEY)).join(lookup, on=[_ROW, _KEY], how="left", maintain_order="left")
    entry = pl.col(column).struct.with_fields(pl.coalesce(pl.col(_OUTCOME), key).alias("key"))
    regrouped = matched.group_by(_ROW, maintain_order=True).agg(entry.alias(column))
    rekeyed = indexed.select(_ROW).join(regrouped, on=_ROW, how="left", maintain_order="left")[column]
    return pl.select(
        pl.when(original.list.len() > 0).then(rekeyed.cast(original.dtype)).otherwise(original).alias(column)
    ).to_series()
