"""`links.market_links` landed: the matcher over the latest record of every Polymarket and Kalshi market in the lake,
the analyst's file (PMW_MARKET_LINKS) applied, written whole as one Parquet file beside the lake's tables
(`_links/market_links/data.parquet`, published over the previous one), and the warehouse view that reads it."""

from __future__ import annotations

from contextlib import closing
from datetime import datetime
from pathlib import Path

import duckdb
import polars as pl

from pipeline.engine.lake.store import Lake
from pipeline.engine.links.matcher import MATCHED_PLATFORMS, match_markets
from pipeline.engine.links.overrides import read_overrides
from pipeline.engine.schema.links import MARKET_LINKS
from pipeline.engine.warehouse.views import RAW_SCHEMA, View, duckdb_type, quote_identifier, raw_views

LINKS_DIR = f"_links/{MARKET_LINKS.name}"  # `_` keeps it off the tables' names, like the models' `_models`
LINKS_KEY = f"{LINKS_DIR}/data.parquet"
_LATEST_MARKETS = f"""
SELECT platform, id, title, category, market_type, outcomes, resolution_date
FROM {RAW_SCHEMA}.markets
WHERE platform IN ({", ".join(f"'{p}'" for p in MATCHED_PLATFORMS)})
QUALIFY row_number() OVER (PARTITION BY platform, id ORDER BY date DESC, last_synced_at DESC) = 1
"""


def latest_markets(lake: Lake) -> pl.DataFrame:
    """The latest landed record of every Polymarket and Kalshi market: the columns the matcher reads."""
    with closing(duckdb.connect()) as session:
        lake.store.attach(session)
        session.execute(f"CREATE SCHEMA {quote_identifier(RAW_SCHEMA)}")
        markets = next(view for view in raw_views(lake) if view.name == "markets")
        session.execute(markets.statement)
        return session.sql(_LATEST_MARKETS).pl()


def land_market_links(lake: Lake, overrides_file: Path | None, now: datetime) -> pl.DataFrame:
    """Match the lake's latest markets, apply the analyst's file, publish the rows; return them."""
    links = match_markets(latest_markets(lake), read_overrides(overrides_file), now)
    with lake.replacing(LINKS_KEY) as temporary:
        links.write_parquet(temporary, compression="zstd")
    return links


def landed_market_links(lake: Lake) -> pl.DataFrame | None:
    """The rows of the last landing of market_links; None before the first."""
    handle = lake.store.open_read(LINKS_KEY)
    if handle is None:
        return None
    with handle:
        return pl.read_parquet(handle)


def links_views(lake: Lake) -> list[View]:
    """The view `links.market_links` over its file: an empty relation of the same columns before the first landing."""
    glob = f"{lake.store.location(LINKS_DIR)}/*.parquet"
    columns = ", ".join(quote_identifier(name) for name in MARKET_LINKS.column_names)
    typed_nulls = ", ".join(f"CAST(NULL AS {duckdb_type(dtype)}) AS {quote_identifier(name)}"
                            for name, dtype in MARKET_LINKS.polars_schema.items())
    files = f"read_parquet('{glob}', allow_empty = true)"
    query = f"SELECT {columns} FROM (SELECT * FROM {files} UNION ALL BY NAME SELECT {typed_nulls} WHERE false)"
    return [View(MARKET_LINKS.schema, MARKET_LINKS.name, query)]
