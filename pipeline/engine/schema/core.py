"""The schema's building blocks: platforms and enums, `Field`, `Table` and `Column`, the partition and lineage
columns every table adds, and the shape of a partition's rejects.

A field keeps its wire name (``marketId``); its warehouse column is the snake_case of that name (``market_id``).
Nested objects become structs, arrays lists, maps (``current_prices``) lists of structs with a ``key`` field, and
free-form objects JSON text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cache, cached_property
from typing import Literal

import polars as pl


class Platform(StrEnum):
    """Platform identifiers as they appear on the wire (the spec's P1..P7)."""

    POLYMARKET = "polymarket"
    KALSHI = "kalshi"
    LIMITLESS = "limitless"
    MANIFOLD = "manifold"
    PROPHETX = "prophetx"
    NOVIG = "novig"
    SXBET = "sxbet"


# Platforms that have series, events, markets and trades, and so partitions in the warehouse.
MARKET_PLATFORMS: tuple[Platform, ...] = (Platform.POLYMARKET, Platform.KALSHI)
# Platforms whose orderbooks the unified API serves.
ORDERBOOK_PLATFORMS: tuple[Platform, ...] = (
    Platform.POLYMARKET,
    Platform.KALSHI,
    Platform.LIMITLESS,
    Platform.MANIFOLD,
)


# Platforms the unified API's sports endpoints price futures and awards on (spec: the sports platform filter).
SPORTS_PLATFORMS: tuple[Platform, ...] = (
    Platform.POLYMARKET,
    Platform.KALSHI,
    Platform.PROPHETX,
    Platform.NOVIG,
    Platform.SXBET,
)


class League(StrEnum):
    """The leagues of the unified API's sports endpoints: the partitions of the sports tables."""

    NFL = "nfl"
    NBA = "nba"
    NHL = "nhl"
    MLB = "mlb"


class MarketStatus(StrEnum):
    OPEN = "open"
    PAUSED = "paused"
    RESOLVED = "resolved"
    CANCELLED = "cancelled"


class MarketType(StrEnum):
    BINARY = "binary"
    CATEGORICAL = "categorical"
    SCALAR = "scalar"


class Source(StrEnum):
    """Where a row came from: the `_source` lineage column."""

    SANDBOX = "sandbox"
    API = "api"
    DIRECT = "direct"


TimeFormat = Literal["iso", "unix_s"]
UTC_TIMESTAMP = pl.Datetime("us", "UTC")


@cache
def snake_case(name: str) -> str:
    """`marketId` -> `market_id`, `clobTokenIds` -> `clob_token_ids`; snake_case names are unchanged."""
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


@dataclass(frozen=True)
class Field:
    """One documented field of a resource, as sent on the wire and as stored in the warehouse.

    kind:
      - ``scalar``: ``dtype`` is the polars type.
      - ``timestamp``: stored as a UTC timestamp; ``time_format`` says how the wire writes it.
      - ``struct``: an object with the documented ``children``.
      - ``list``: an array of ``dtype`` scalars, or of structs when ``children`` is set.
      - ``map``: an object keyed by free strings whose values are ``dtype`` scalars or ``children``
        structs; stored as a list of structs whose first field is ``key``.
      - ``json``: a free-form object, stored as JSON text.
    """

    wire: str
    kind: Literal["scalar", "timestamp", "struct", "list", "map", "json"] = "scalar"
    dtype: pl.DataType | None = None
    required: bool = False
    nullable: bool = False
    enum: tuple[str, ...] | None = None
    children: tuple[Field, ...] = ()
    time_format: TimeFormat | None = None
    doc: str = ""
    non_negative: bool = False  # a quantity (a size in shares or contracts): a negative one is refused

    @property
    def name(self) -> str:
        """The warehouse column (or struct field) name."""
        return snake_case(self.wire)

    @property
    def polars_dtype(self) -> pl.DataType:
        if self.kind == "timestamp":
            return UTC_TIMESTAMP
        if self.kind == "json":
            return pl.String()
        if self.kind == "struct":
            return pl.Struct({child.name: child.polars_dtype for child in self.children})
        if self.kind == "list":
            inner = self._element_dtype()
            return pl.List(inner)
        if self.kind == "map":
            element = self._element_dtype()
            fields = {"key": pl.String()}
            if isinstance(element, pl.Struct):
                fields.update({f.name: f.dtype for f in element.fields})
            else:
                fields["value"] = element
            return pl.List(pl.Struct(fields))
        assert self.dtype is not None, f"scalar field {self.wire} has no dtype"
        return self.dtype

    def _element_dtype(self) -> pl.DataType:
        if self.children:
            return pl.Struct({child.name: child.polars_dtype for child in self.children})
        assert self.dtype is not None, f"{self.kind} field {self.wire} has no element dtype"
        return self.dtype

    def type_label(self) -> str:
        """A short human label of the stored type, for the docs."""
        return _type_label(self.polars_dtype)


def _type_label(dtype: pl.DataType) -> str:
    if isinstance(dtype, pl.Datetime):
        return "timestamp (UTC)"
    if isinstance(dtype, pl.List):
        return f"list<{_type_label(dtype.inner)}>"
    if isinstance(dtype, pl.Struct):
        return "struct{" + ", ".join(f"{f.name}: {_type_label(f.dtype)}" for f in dtype.fields) + "}"
    return {
        pl.String: "string",
        pl.Float64: "double",
        pl.Int64: "bigint",
        pl.Boolean: "boolean",
        pl.Date: "date",
    }.get(type(dtype), str(dtype))


# The constructors the domain modules declare their fields with: a string, a number, an ISO-8601 time, a Unix time
# in seconds (any other keyword of Field passes through).
def string(wire: str, **kw: object) -> Field:
    return Field(wire, dtype=pl.String(), **kw)  # type: ignore[arg-type]


def number(wire: str, **kw: object) -> Field:
    return Field(wire, dtype=pl.Float64(), **kw)  # type: ignore[arg-type]


def iso_time(wire: str, **kw: object) -> Field:
    return Field(wire, kind="timestamp", time_format="iso", **kw)  # type: ignore[arg-type]


def unix_time(wire: str, **kw: object) -> Field:
    return Field(wire, kind="timestamp", time_format="unix_s", **kw)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Table:
    """A warehouse table: the resource's documented fields plus partition and lineage columns."""

    name: str
    resource: str
    fields: tuple[Field, ...]
    primary_key: tuple[str, ...]
    time_column: str | None
    doc: str
    # The order rows are written in: the columns readers filter on first (a market, then time), so that
    # Parquet row-group statistics let them skip most of a file. Explicit per table, not derived from the
    # key, because the best order is a reading choice (trades: market, time, then id as a tie-break).
    sort_key: tuple[str, ...]
    wire_only: tuple[Field, ...] = field(default=())
    # Columns the pipeline adds beyond the resource's fields, the partition and the lineage.
    added: tuple[Column, ...] = field(default=())
    # Whether the API may send a record more than once under its identity: a record listed by an id of its own,
    # which paging tells again (pipeline.engine.sources.paging), or a price point that two answers of a batch cut
    # in time hold (pipeline.engine.normalize.partitions.unified `PointsOnce`). The first version lands; a later
    # one with other values is rejected as a conflicting repeat, which the `repeats_agree` check counts.
    listed_by_id: bool = True
    # The partition dimension beside the day: `platform` (the market, book and trader tables) or `league` (the
    # sports tables).
    partitioned_by: Literal["platform", "league"] = "platform"
    # The platforms a table partitioned by platform has partitions of (the partition column's enum).
    platforms: tuple[Platform, ...] = MARKET_PLATFORMS
    # Whether a day's partition accumulates rounds (orderbook snapshots taken through the day), each round a
    # file of its own written once, rather than being replaced whole (pipeline.engine.lake.store).
    rounds: bool = False
    # Whether its `market_id` names a market of the day's markets partition (the `references_partition_markets`
    # check): not for books and traders' trades, whose markets are those of a watch list or a trader, nor for
    # the sports odds, whose markets are each platform's.
    references_markets: bool = True

    def __post_init__(self) -> None:
        unknown = [c for c in self.sort_key if c not in self.column_names]
        if unknown:
            raise ValueError(f"table {self.name}: sort_key names unknown columns {unknown}")

    @cached_property
    def columns(self) -> tuple[Column, ...]:
        """Every column, in order (computed once: schema, checks and writers ask for it on every partition)."""
        documented = [Column(f.name, f.polars_dtype, f.required, f.enum, f.doc, f) for f in self.fields]
        documented_names = {c.name for c in documented}
        partition_and_lineage = LEAGUE_PARTITION_AND_LINEAGE_COLUMNS if self.partitioned_by == "league" else (
            _platform_column(self.platforms), *PARTITION_AND_LINEAGE_COLUMNS[1:])
        extra = [c for c in partition_and_lineage if c.name not in documented_names]
        return (*documented, *extra, *self.added)

    @property
    def partition_columns(self) -> tuple[str, str]:
        """The columns the lake keeps in a partition's path: the dimension, then the day."""
        return (self.partitioned_by, "date")

    @property
    def partition_values(self) -> tuple[str, ...]:
        """The values the partition dimension takes."""
        return tuple(League) if self.partitioned_by == "league" else self.platforms

    @cached_property
    def column_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    @property
    def required_columns(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns if c.required)

    @cached_property
    def polars_schema(self) -> pl.Schema:
        """The table's polars schema, one object per table: read it, never change it."""
        return pl.Schema({c.name: c.dtype for c in self.columns})

    def field(self, wire: str) -> Field:
        for f in self.fields:
            if f.wire == wire:
                return f
        raise KeyError(f"{self.name} has no documented field {wire!r}")


@dataclass(frozen=True)
class Column:
    name: str
    dtype: pl.DataType
    required: bool
    enum: tuple[str, ...] | None
    doc: str
    field: Field | None = None


def _platform_column(platforms: tuple[Platform, ...]) -> Column:
    """The `platform` partition column, its enum being the table's platforms."""
    return Column("platform", pl.String(), True, tuple(platforms), "partition: the platform")


PARTITION_AND_LINEAGE_COLUMNS: tuple[Column, ...] = (
    _platform_column(MARKET_PLATFORMS),
    Column("date", pl.Date(), True, None, "partition: the UTC day"),
    Column("_source", pl.String(), True, tuple(Source), "lineage: sandbox, api or direct"),
    Column("_fetched_at", UTC_TIMESTAMP, True, None, "lineage: when the record was fetched (UTC)"),
)

LEAGUE_PARTITION_AND_LINEAGE_COLUMNS: tuple[Column, ...] = (
    Column("league", pl.String(), True, tuple(League), "partition: the league asked for"),
    *PARTITION_AND_LINEAGE_COLUMNS[1:],
)

# Rows of trades and price history belong to the market the pipeline asked for, whatever id the server put on
# them (the unified id, the platform's id, or none): `market_id` is always the partition's market id, and what
# the server said is kept here when it differed.
SERVED_MARKET_ID = Column(
    "_served_market_id", pl.String(), False, None,
    "lineage: the market id the server put on the row, when it differed from `market_id` (the market asked for)",
)

PLATFORM_FIELD = string("platform", required=True, enum=tuple(MARKET_PLATFORMS), doc="platform identifier")

# A partition's rejects: each record that could not become a row, as JSON text, with the reason.
REJECTS_SCHEMA = pl.Schema({"raw": pl.String(), "reason": pl.String(), "_fetched_at": UTC_TIMESTAMP})
