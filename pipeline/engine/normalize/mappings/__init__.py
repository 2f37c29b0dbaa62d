"""How the platforms' own responses map onto the warehouse tables: the tables docs/schema.md renders.

The status and market-type tables are read by the normalizers (pipeline.engine.normalize.polymarket, .kalshi), so
the docs cannot say one thing while the code does another; the column tables are held to what the
normalizers fill by tests/engine/normalize/test_native.py. `python -m scripts.generate_docs` renders them.
One module per platform; `columns` holds the shape of a mapping and the notes that hold for every one.
"""

from __future__ import annotations

from pipeline.engine.normalize.mappings.columns import NOTES, EntityMapping
from pipeline.engine.normalize.mappings.kalshi import (
    KALSHI,
    KALSHI_MARKET_TYPES,
    KALSHI_STATUS,
    KALSHI_STATUSES,
    KALSHI_VOIDED,
)
from pipeline.engine.normalize.mappings.polymarket import (
    POLYMARKET,
    POLYMARKET_CATEGORIES,
    POLYMARKET_FLAGS,
    POLYMARKET_MARKET_TYPES,
    POLYMARKET_STATUS_RULES,
    POLYMARKET_WIDE_SPREAD,
    StatusRule,
)

DIRECT_MAPPINGS: tuple[EntityMapping, ...] = (*POLYMARKET, *KALSHI)

__all__ = [
    "DIRECT_MAPPINGS",
    "KALSHI_MARKET_TYPES",
    "KALSHI_STATUS",
    "KALSHI_STATUSES",
    "KALSHI_VOIDED",
    "NOTES",
    "POLYMARKET_CATEGORIES",
    "POLYMARKET_FLAGS",
    "POLYMARKET_MARKET_TYPES",
    "POLYMARKET_STATUS_RULES",
    "POLYMARKET_WIDE_SPREAD",
    "EntityMapping",
    "StatusRule",
]
