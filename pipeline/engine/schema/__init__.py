"""The documented tables of the warehouse: the single source of truth for columns, types, keys and enums.

Every table is described once, as the resource the unified API sends, in the module of its domain: `core` (the
building blocks), `markets` (the daily ingestion's five tables), `orderbooks`, `profiles`, `sports`,
`platform_status`, and `envelopes` (the API's wrappers and limits, not tables). This package gathers the
registries; the sandbox, the normalizers, the lake, the checks, the tests and ``docs/schema.md`` read them, and
nothing else writes the columns or the enums down.
"""

from __future__ import annotations

from pipeline.engine.schema.core import (
    LEAGUE_PARTITION_AND_LINEAGE_COLUMNS,
    MARKET_PLATFORMS,
    ORDERBOOK_PLATFORMS,
    PARTITION_AND_LINEAGE_COLUMNS,
    REJECTS_SCHEMA,
    SERVED_MARKET_ID,
    SPORTS_PLATFORMS,
    UTC_TIMESTAMP,
    Column,
    Field,
    League,
    MarketStatus,
    MarketType,
    Platform,
    Source,
    Table,
    snake_case,
)
from pipeline.engine.schema.envelopes import (
    ERROR_FIELDS,
    LOWEST_DOCUMENTED_LIMIT,
    MAX_LIMIT,
    MAX_PRICE_HISTORY_MARKETS,
    META_FIELDS,
    PAGINATION_FIELDS,
    PRICE_HISTORY_INTERVALS,
)
from pipeline.engine.schema.markets import EVENTS, MARKETS, OUTCOME_MAPS, PRICE_HISTORY, SERIES, TABLES, TRADES
from pipeline.engine.schema.orderbooks import (
    ORDERBOOK_FIELDS,
    ORDERBOOK_LEVELS,
    ORDERBOOK_SNAPSHOTS,
    BookSide,
    OutcomeSide,
)
from pipeline.engine.schema.platform_status import HEALTH_FIELDS, PLATFORM_FIELDS, PLATFORM_STATUS, STATUS_TABLES
from pipeline.engine.schema.profiles import PROFILE_TRADES, PROFILES
from pipeline.engine.schema.sports import (
    AWARDS,
    FUTURE_MARKET,
    FUTURE_ODDS,
    FUTURES,
    IMPLIED_PROBABILITY_RELATIVE_TOLERANCE,
    LEAGUES,
    OVERROUND_TOLERANCE,
    SPORTS_TABLES,
    TEAMS,
    OddsKind,
)

# Tables landed from watch lists and snapshot rounds rather than from the day's catalogue: they are in the lake,
# the raw views, the checks and the docs like TABLES, but not in the daily ingestion (its job, backfill, status).
WATCHLIST_TABLES: dict[str, Table] = {
    t.name: t for t in (ORDERBOOK_LEVELS, ORDERBOOK_SNAPSHOTS, PROFILES, PROFILE_TRADES)}


def lake_tables() -> dict[str, Table]:
    """Every table of the lake and the warehouse's raw views: the daily ingestion's (TABLES) and the watch lists'
    (WATCHLIST_TABLES) and the service's own status (STATUS_TABLES), partitioned by platform and day, then the sports
    tables (SPORTS_TABLES, league x day). Read at each call, so that a table added to any registry (as
    tests/architecture's recipe does) is seen."""
    return {**TABLES, **WATCHLIST_TABLES, **STATUS_TABLES, **SPORTS_TABLES}


__all__ = [
    "AWARDS",
    "ERROR_FIELDS",
    "EVENTS",
    "FUTURES",
    "FUTURE_MARKET",
    "FUTURE_ODDS",
    "HEALTH_FIELDS",
    "IMPLIED_PROBABILITY_RELATIVE_TOLERANCE",
    "LEAGUES",
    "LEAGUE_PARTITION_AND_LINEAGE_COLUMNS",
    "LOWEST_DOCUMENTED_LIMIT",
    "MARKETS",
    "MARKET_PLATFORMS",
    "MAX_LIMIT",
    "MAX_PRICE_HISTORY_MARKETS",
    "META_FIELDS",
    "ORDERBOOK_FIELDS",
    "ORDERBOOK_LEVELS",
    "ORDERBOOK_PLATFORMS",
    "ORDERBOOK_SNAPSHOTS",
    "OUTCOME_MAPS",
    "OVERROUND_TOLERANCE",
    "PAGINATION_FIELDS",
    "PARTITION_AND_LINEAGE_COLUMNS",
    "PLATFORM_FIELDS",
    "PLATFORM_STATUS",
    "PRICE_HISTORY",
    "PRICE_HISTORY_INTERVALS",
    "PROFILES",
    "PROFILE_TRADES",
    "REJECTS_SCHEMA",
    "SERIES",
    "SERVED_MARKET_ID",
    "SPORTS_PLATFORMS",
    "SPORTS_TABLES",
    "STATUS_TABLES",
    "TABLES",
    "TEAMS",
    "TRADES",
    "UTC_TIMESTAMP",
    "WATCHLIST_TABLES",
    "BookSide",
    "Column",
    "Field",
    "League",
    "MarketStatus",
    "MarketType",
    "OddsKind",
    "OutcomeSide",
    "Platform",
    "Source",
    "Table",
    "lake_tables",
    "snake_case",
]
