from __future__ import annotations

import polars as pl
import pytest

from pipeline.engine.schema import (
    PARTITION_AND_LINEAGE_COLUMNS,
    TABLES,
    MarketStatus,
    MarketType,
    snake_case,
)
from scripts import generate_docs


@pytest.mark.parametrize(
    ("wire", "column"),
    [
        ("marketId", "market_id"),
        ("clobTokenIds", "clob_token_ids"),
        ("bidAsk", "bid_ask"),
        ("platform_id", "platform_id"),
        ("openInterest", "open_interest"),
        ("volume_24h", "volume_24h"),
    ],
)
def test_snake_case(wire: str, column: str) -> None:
    assert snake_case(wire) == column


def test_the_five_tables_and_the_enums() -> None:
    assert list(TABLES) == ["series", "events", "markets", "trades", "price_history"]
    assert [s.value for s in MarketStatus] == ["open", "paused", "resolved", "cancelled"]
    assert [t.value for t in MarketType] == ["binary", "categorical", "scalar"]
    assert TABLES["markets"].field("status").enum == tuple(MarketStatus)
    assert TABLES["markets"].field("market_type").enum == tuple(MarketType)


@pytest.mark.parametrize("table", TABLES.values(), ids=list(TABLES))
def test_columns_are_snake_case_unique_and_carry_lineage(table) -> None:
    names = table.column_names
    assert len(names) == len(set(names))
    assert all(name == snake_case(name) for name in names)
    for extra in PARTITION_AND_LINEAGE_COLUMNS:
        assert extra.name in names
    assert set(table.primary_key) <= set(names)
    assert set(table.required_columns) >= set(table.primary_key)


@pytest.mark.parametrize("table", TABLES.values(), ids=list(TABLES))
def test_polars_and_arrow_schemas_agree(table) -> None:
    empty = pl.DataFrame(schema=table.polars_schema)
    arrow_schema = empty.to_arrow().schema
    assert empty.columns == list(table.column_names)
    assert arrow_schema.names == list(table.column_names)
    assert pl.from_arrow(arrow_schema.empty_table()).schema == table.polars_schema


def test_nested_types_are_structs_lists_and_maps() -> None:
    markets = TABLES["markets"].polars_schema
    assert markets["outcomes"] == pl.List(pl.Struct({"id": pl.String, "name": pl.String}))
    assert markets["current_prices"] == pl.List(
        pl.Struct({"key": pl.String, "price": pl.Float64, "bid": pl.Float64, "ask": pl.Float64})
    )
    assert markets["price_24h_changes"] == pl.List(pl.Struct({"key": pl.String, "value": pl.Float64}))
    assert markets["metadata"].to_schema()["clob_token_ids"] == pl.List(pl.String)
    assert TABLES["trades"].polars_schema["timestamp"] == pl.Datetime("us", "UTC")
    assert TABLES["trades"].polars_schema["metadata"] == pl.String
    bid_ask = TABLES["price_history"].polars_schema["bid_ask"]
    assert set(bid_ask.to_schema()) == {"bid", "ask"}


def test_docs_are_generated_from_the_schema() -> None:
    assert generate_docs.DOC_PATH.read_text() == generate_docs.render(), (
        "docs/schema.md is stale: run python -m scripts.generate_docs"
    )
    checks = generate_docs.CHECKS_PATH.read_text()
    assert checks == generate_docs.render_checks_doc(checks), (
        "docs/checks.md is stale: run python -m scripts.generate_docs"
    )
