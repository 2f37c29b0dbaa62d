"""What normalization hands on: a table's rows with the records that could not become rows (`Normalized`),
and, in a stream of a partition's trades or price history, the news that markets are complete
(`MarketsDone`), which the lake's streaming writer (`pipeline.engine.lake.stream`) waits for."""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

# The reason a record is rejected when paging met its id before with other values (the first version is kept).
CONFLICTING_REPEAT = "conflicting repeat: an item with this id came earlier with other values, and that one is kept"


@dataclass(frozen=True)
class Normalized:
    """The rows of one table (exactly its polars schema) and the records that could not become rows."""

    rows: pl.DataFrame
    rejects: pl.DataFrame


@dataclass(frozen=True)
class MarketsDone:
    """An item of a trades or price-history stream: every market whose id sorts at or before `through` has
    delivered all its rows, so the lake may write them."""

    through: str
