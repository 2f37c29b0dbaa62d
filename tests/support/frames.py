"""Frames of the warehouse tables built by hand, for tests of the lake, the warehouse and the SQL models."""

from __future__ import annotations

import random
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import polars as pl

from pipeline.engine.lake.store import Lake
from pipeline.engine.schema import TABLES

DAY = date(2026, 11, 20)
FETCHED_AT = datetime(2026, 11, 21, 3, 0, tzinfo=UTC)
REJECTS_SCHEMA = {"raw": pl.String(), "reason": pl.String(), "_fetched_at": pl.Datetime("us", "UTC")}


def table_frame(table: str, platform: str, day: date, n: int, columns: dict[str, list[object]]) -> pl.DataFrame:
    """n rows of ``table`` in the partition: the given columns, lineage filled in, nulls elsewhere."""
    defaults = {
        "platform": [platform] * n,
        "date": [day] * n,
        "_source": ["sandbox"] * n,
        "_fetched_at": [FETCHED_AT] * n,
    }
    data = {**defaults, **columns}
    schema = TABLES[table].polars_schema
    return pl.DataFrame({name: data.get(name, [None] * n) for name in schema}, schema=schema)


def trades_frame(platform: str, day: date, n: int, *, seed: int = 0, price: float | None = None) -> pl.DataFrame:
    """n trades in random order (so that sorting is visible), spread over a few markets of the day."""
    rng = random.Random(seed)
    start = datetime(day.year, day.month, day.day, tzinfo=UTC)
    columns: dict[str, list[object]] = {
        "trade_id": [f"{platform}-{seed}-{i}" for i in range(n)],
        "market_id": [f"m{rng.randrange(7)}" for _ in range(n)],
        "side": [rng.choice(["buy", "sell"]) for _ in range(n)],
        "price": [price if price is not None else rng.random() for _ in range(n)],
        "size": [float(rng.randrange(1, 100)) for _ in range(n)],
        "timestamp": [start + timedelta(seconds=rng.randrange(86_400)) for _ in range(n)],
        "taker": [True] * n,  # takers' rows: the marts count a match by its taker's row
        "user": [{"name": f"u{i % 3}", "pseudonym": None, "profile_image": None} for i in range(n)],
        "metadata": ['{"k": 1}'] * n,
    }
    return table_frame("trades", platform, day, n, columns)


def rejects_frame(n: int) -> pl.DataFrame:
    return pl.DataFrame(
        {"raw": [f'{{"id": {i}}}' for i in range(n)], "reason": ["missing price"] * n, "_fetched_at": [FETCHED_AT] * n},
        schema=REJECTS_SCHEMA,
    )


def sample_frame(table: str, platform: str, day: date, n: int = 3) -> pl.DataFrame:
    """A few rows of any table: sort-key columns filled (descending, to be sorted), markets' nesting too."""
    columns: dict[str, list[object]] = {}
    for name in TABLES[table].sort_key:
        dtype = TABLES[table].polars_schema[name]
        if dtype == pl.String():
            columns[name] = [f"{name}-{i}" for i in reversed(range(n))]
        else:
            columns[name] = [FETCHED_AT - timedelta(hours=i) for i in range(n)]
    if table == "markets":
        columns["outcomes"] = [[{"id": "yes", "name": "Yes"}, {"id": "no", "name": "No"}]] * n
        columns["current_prices"] = [[{"key": "yes", "price": 0.4, "bid": 0.39, "ask": None}]] * n
        columns["metadata"] = [{"condition_id": "c", "clob_token_ids": ["a", "b"]}] * n
    return table_frame(table, platform, day, n, columns)


def temp_files(lake: Lake) -> list[Path]:
    return sorted(p for p in lake.root.rglob(".*") if p.name.endswith(".tmp"))

