"""The documented tables of the warehouse: the single source of truth for columns, types, keys and enums.

Every table is described once, as the resource the unified API sends (docs/api-contract.md): each field
keeps its wire name (``marketId``), and its warehouse column is the snake_case of that name
(``market_id``). Nested objects become structs, arrays become lists, and maps (``current_prices``) become
lists of structs with a ``key`` field, because Parquet, polars and DuckDB all read those the same way.
Free-form objects (``metadata`` of a trade) are kept as JSON text.

The sandbox, the normalisers, the asset checks, the tests and ``docs/schema.md`` read these definitions;
nothing else writes the columns or the enums down.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cache, cached_property
from typing import Literal

import polars as pl
import pyarrow as pa


class Platform(StrEnum):
    """Platform identifiers as they appear on the wire: the unified API's `platform` (docs/api-contract.md)."""

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


def _str(wire: str, **kw: object) -> Field:
    return Field(wire, dtype=pl.String(), **kw)  # type: ignore[arg-type]


def _num(wire: str, **kw: object) -> Field:
    return Field(wire, dtype=pl.Float64(), **kw)  # type: ignore[arg-type]


def _iso(wire: str, **kw: object) -> Field:
    return Field(wire, kind="timestamp", time_format="iso", **kw)  # type: ignore[arg-type]


def _unix(wire: str, **kw: object) -> Field:
    return Field(wire, kind="timestamp", time_format="unix_s", **kw)  # type: ignore[arg-type]


# Nested objects (spec: Outcome, PriceDetail, LastTradeInfo, MarketMetadata, OHLC, user).
OUTCOME = (_str("id", required=True), _str("name", required=True))
PRICE_DETAIL = (_num("price", required=True), _num("bid"), _num("ask"))
LAST_TRADE_INFO = (
    _num("price", required=True), _iso("timestamp", required=True), _num("size", required=True, non_negative=True)
)
MARKET_METADATA = (
    _str("conditionId", nullable=True),
    _str("ammType", nullable=True),
    _str("marketType", nullable=True),
    _str("formatType", nullable=True),
    _num("competitive"),
    _num("score"),
    _num("bestBid"),
    _num("bestAsk"),
    _num("spread"),
    Field("clobTokenIds", kind="list", dtype=pl.String(), nullable=True),
)
OHLC = (_num("open"), _num("high"), _num("low"), _num("close"))
TRADE_USER = (_str("name"), _str("pseudonym"), _str("profile_image"))


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
    # in time hold (pipeline.engine.sources.partition `PointsOnce`). The first version lands; a later one with
    # other values is rejected as a conflicting repeat, which the `repeats_agree` check counts.
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

    @property
    def arrow_schema(self) -> pa.Schema:
        return pl.DataFrame(schema=self.polars_schema).to_arrow().schema

    def field(self, wire: str) -> Field:
        for f in self.fields:
            if f.wire == wire:
                return f
        raise KeyError(f"{self.name} has no documented field {wire!r}")

    def all_wire_fields(self) -> tuple[Field, ...]:
        """Documented fields, including those sent on the wire but not stored (nested resources)."""
        return (*self.fields, *self.wire_only)


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

_PLATFORM = _str("platform", required=True, enum=tuple(MARKET_PLATFORMS), doc="platform identifier")


def _added(name: str, dtype: pl.DataType, doc: str) -> Column:
    """An optional column the platforms' own APIs fill and the unified API's resource does not document."""
    return Column(name, dtype, False, None, doc)


_CURRENCY = "in the platform's currency (USDC on Polymarket); Kalshi counts contracts: see the *_contracts columns"
_CONTRACTS = "in contracts (Kalshi: each pays $1); null where the platform reports currency instead"

SERIES_ADDED = (
    _added("fee_type", pl.String(), "how the platform charges fees on the series' markets (Kalshi `fee_type`)"),
    _added("fee_multiplier", pl.Float64(), "the multiplier of the series' fee formula (Kalshi `fee_multiplier`)"),
)
EVENTS_ADDED = (
    _added("mutually_exclusive", pl.Boolean(),
           "at most one of the event's markets resolves yes, so their prices sum to about 1 (Kalshi "
           "`mutually_exclusive`, Polymarket `negRisk`); false for a ladder of thresholds"),
)
MARKETS_ADDED = (
    _added("outcome_label", pl.String(),
           "the market's own label among its event's markets (a candidate, a team, a bracket), where the title is "
           "the event's question"),
    _added("subtitle", pl.String(), "the platform's subtitle of the market"),
    _added("strike_type", pl.String(),
           "how lower_bound and upper_bound read (Kalshi `strike_type`: greater, less, between, ...)"),
    _added("lower_bound", pl.Float64(), "the low end (or threshold) of the value the market settles on"),
    _added("upper_bound", pl.Float64(), "the high end (or cap) of the value the market settles on"),
    _added("last_trade_price", pl.Float64(), "the first outcome's price at the last trade; null if never traded"),
    _added("mutually_exclusive", pl.Boolean(), "one market of an event of which at most one resolves yes"),
    _added("neg_risk_market_id", pl.String(), "Polymarket's negative-risk group that the market is a leg of"),
    _added("volume_24h_contracts", pl.Float64(), f"volume of the last 24 hours {_CONTRACTS}"),
    _added("volume_total_contracts", pl.Float64(), f"volume since the market opened {_CONTRACTS}"),
    _added("open_interest_contracts", pl.Float64(), f"contracts outstanding {_CONTRACTS}"),
    _added("fee_type", pl.String(), "the platform's fee schedule of the market (Polymarket `feeType`)"),
    _added("event_start_at", UTC_TIMESTAMP, "when the real-world event starts (a game's start)"),
    _added("settlement_value", pl.Float64(), "what a contract of the first outcome paid at settlement, in dollars"),
    _added("expiration_value", pl.String(), "the underlying's value the market settled on, as the platform wrote it"),
    _added("placeholder", pl.Boolean(),
           "an unnamed leg of a negative-risk event (Polymarket's \"Person A\", listed inactive with no prices and no "
           "volume until named): not a market of its event's count; null where the platform has none"),
)

SERIES = Table(
    name="series",
    resource="Series",
    doc="Series (recurring families of events) that the markets of the partition belong to.",
    primary_key=("platform", "date", "id"),
    time_column=None,
    sort_key=("id",),
    added=SERIES_ADDED,
    fields=(
        _str("id", required=True, doc="series id on its platform"),
        _PLATFORM,
        _str("platform_id", required=True),
        _str("title", required=True),
        _iso("last_synced_at", required=True),
        _str("slug"),
        _str("description"),
        _str("image_url"),
        _str("category"),
        Field("tags", kind="list", dtype=pl.String()),
        _num("event_count"),
        _num("market_count"),
        _num("total_volume"),
    ),
    wire_only=(Field("events", kind="list", doc="nested events, only with include_nested=true"),),
)

EVENTS = Table(
    name="events",
    resource="Event",
    doc="Events that the markets of the partition belong to.",
    primary_key=("platform", "date", "id"),
    time_column=None,
    sort_key=("id",),
    added=EVENTS_ADDED,
    fields=(
        _str("id", required=True),
        _PLATFORM,
        _str("platform_id", required=True),
        _str("title", required=True),
        _iso("last_synced_at", required=True),
        _str("series_id"),
        _str("slug"),
        _str("description"),
        _str("image_url"),
        _str("resolution_source_url"),
        _iso("event_start_at"),
        _iso("event_end_at"),
        _num("market_count"),
        _num("total_volume"),
    ),
    wire_only=(Field("markets", kind="list", doc="nested markets, only with with_nested_markets=true"),),
)

MARKETS = Table(
    name="markets",
    resource="Market",
    doc="Markets live on the day (tradable at some moment of it), in the state seen when fetched. A market whose "
    "record says it is open (`status` open, synced after the day started) is live whatever its `trading_end_at`; "
    "another, from its start to the earlier of `trading_end_at` and `resolved_at`.",
    primary_key=("platform", "date", "id"),
    time_column=None,
    sort_key=("id",),
    added=MARKETS_ADDED,
    fields=(
        _str("id", required=True),
        _PLATFORM,
        _str("platform_id", required=True),
        _str("event_id"),
        _str("event_name"),
        _str("event_slug", nullable=True),
        _str("series_id"),
        _str("slug"),
        _str("market_slug"),
        _str("title", required=True),
        _str("description"),
        _str("category"),
        _str("subcategory", nullable=True),
        Field("tags", kind="list", dtype=pl.String(), nullable=True),
        _str("status", required=True, enum=tuple(MarketStatus)),
        _str("market_type", required=True, enum=tuple(MarketType)),
        Field("outcomes", kind="list", children=OUTCOME, required=True),
        Field("current_prices", kind="map", children=PRICE_DETAIL, required=True, doc="outcome key -> price detail"),
        _num("volume_24h", nullable=True, doc=_CURRENCY),
        _num("volume_7d", nullable=True),
        _num("volume_total", nullable=True, doc=_CURRENCY),
        _num("liquidity", nullable=True),
        _num("liquidity_score"),
        _num("open_interest", nullable=True, doc=_CURRENCY),
        _num("unique_traders", nullable=True),
        _num("fee_rate", nullable=True),
        _num("trading_fee", nullable=True),
        _num("withdrawal_fee", nullable=True),
        _str("source_url"),
        _str("image_url"),
        _iso("created_at"),
        _iso("trading_start_at", nullable=True),
        _iso("trading_end_at", doc="when trading ended, for a closed market (Polymarket `closedTime`, before or "
             "after `endDate`); for one still open, its scheduled end (Polymarket `endDate`, Kalshi `close_time`, "
             "the unified API's value), which it may outlive (Gamma keeps a market open past `endDate` until it "
             "closes it): no evidence that trading stopped, so liveness reads `status` open instead"),
        _iso("resolution_date", doc="the scheduled end, when resolution is expected (Polymarket `endDate`, kept "
             "whenever the market closes)"),
        _iso("resolved_at", nullable=True),
        _str("resolution_criteria", nullable=True),
        _str("resolution_source", nullable=True),
        Field("price_24h_changes", kind="map", dtype=pl.Float64(), nullable=True),
        Field("price_7d_changes", kind="map", dtype=pl.Float64(), nullable=True),
        Field("last_trades", kind="map", children=LAST_TRADE_INFO, nullable=True),
        Field("metadata", kind="struct", children=MARKET_METADATA),
        _iso("last_synced_at", required=True),
    ),
)

# A market's maps "from outcome key" (spec: `current_prices`, ...): every map of a market is keyed by outcome, and
# stored keyed by the outcome's id (pipeline.engine.normalize.outcome_keys).
OUTCOME_MAPS: tuple[str, ...] = tuple(f.name for f in MARKETS.fields if f.kind == "map")

TRADES = Table(
    name="trades",
    resource="Trade",
    doc="Trades whose timestamp falls in the day.",
    primary_key=("platform", "date", "market_id", "trade_id"),
    time_column="timestamp",
    sort_key=("market_id", "timestamp", "trade_id"),
    added=(SERVED_MARKET_ID,),
    fields=(
        _str("trade_id", required=True),
        _str("market_id", required=True),
        _PLATFORM,
        _str("side", doc="buy or sell"),
        _num("price", required=True),
        _num("size", required=True, non_negative=True),
        _unix("timestamp", required=True),
        _str("outcome"),
        Field("taker", dtype=pl.Boolean()),
        _str("transaction_hash"),
        Field("user", kind="struct", children=TRADE_USER),
        Field("metadata", kind="json", doc="free-form object, as JSON text"),
    ),
)

PRICE_HISTORY = Table(
    name="price_history",
    resource="Price-history point",
    doc="Price points whose timestamp falls in the day, for the markets live on it (hourly by default).",
    primary_key=("platform", "date", "market_id", "outcome_id", "timestamp"),
    time_column="timestamp",
    sort_key=("market_id", "outcome_id", "timestamp"),
    added=(SERVED_MARKET_ID,),
    fields=(
        _unix("timestamp", required=True),
        Field("price", kind="struct", children=OHLC, required=True,
              doc="the traded price over the period (a point fills close only); on the platforms' own APIs a "
                  "period without trades closes at the last price before it, so that a market's series has no "
                  "holes (the direct mappings below say how)"),
        _PLATFORM,
        _str("marketId", required=True),
        _num("volume", doc="traded in the period (Kalshi: contracts); 0 says the period had no trade"),
        _num("openInterest"),
        Field(
            "bidAsk",
            kind="struct",
            children=(
                Field("bid", kind="struct", children=OHLC),
                Field("ask", kind="struct", children=OHLC),
            ),
        ),
        _str("outcomeId", required=True),
    ),
)

TABLES: dict[str, Table] = {t.name: t for t in (SERIES, EVENTS, MARKETS, TRADES, PRICE_HISTORY)}


class OutcomeSide(StrEnum):
    """Which outcome's book a level is of: an orderbook has a YES book and a NO book."""

    YES = "yes"
    NO = "no"


class BookSide(StrEnum):
    BID = "bid"
    ASK = "ask"


_SNAPSHOT_AT = Field("snapshot_at", kind="timestamp", required=True,
                     doc="the snapshot round's time (UTC): one round takes every book of the platform's list once")
_BOOK_PLATFORM = _str("platform", required=True, enum=tuple(ORDERBOOK_PLATFORMS), doc="platform identifier")
_BOOK_MARKET = _str("market_id", required=True, doc="the market whose book was asked for")
_BEST_BID = "the YES book's highest bid price; null when it has no bid"

ORDERBOOK_LEVELS = Table(
    name="orderbook_levels",
    resource="Orderbook",
    doc="Every price level of the orderbooks of a snapshot round: one row per round, market, outcome side "
        "(yes/no), book side (bid/ask) and level.",
    primary_key=("platform", "date", "snapshot_at", "market_id", "outcome_side", "book_side", "level"),
    time_column="snapshot_at",
    sort_key=("market_id", "snapshot_at", "outcome_side", "book_side", "level"),
    added=(SERVED_MARKET_ID,),
    listed_by_id=False,
    platforms=ORDERBOOK_PLATFORMS,
    rounds=True,
    references_markets=False,
    fields=(
        _SNAPSHOT_AT,
        _BOOK_MARKET,
        _BOOK_PLATFORM,
        _str("outcome_side", required=True, enum=tuple(OutcomeSide), doc="the YES book or the NO book"),
        _str("book_side", required=True, enum=tuple(BookSide), doc="bid or ask"),
        Field("level", dtype=pl.Int64(), required=True,
              doc="1 for the best price of its side, then 2, 3, ... away from it"),
        _num("price", required=True),
        _num("size", required=True, doc="shares or contracts resting at the price"),
    ),
)

ORDERBOOK_SNAPSHOTS = Table(
    name="orderbook_snapshots",
    resource="Orderbook",
    doc="One row per snapshot round and market: the YES book's best prices, spread and depth, and the book's "
        "trading rules.",
    primary_key=("platform", "date", "snapshot_at", "market_id"),
    time_column="snapshot_at",
    sort_key=("market_id", "snapshot_at"),
    added=(SERVED_MARKET_ID,),
    listed_by_id=False,
    platforms=ORDERBOOK_PLATFORMS,
    rounds=True,
    references_markets=False,
    fields=(
        _SNAPSHOT_AT,
        _BOOK_MARKET,
        _BOOK_PLATFORM,
        _iso("timestamp", doc="the book's time as the server stated it"),
        _num("best_bid", nullable=True, doc=_BEST_BID),
        _num("best_ask", nullable=True, doc="the YES book's lowest ask price; null when it has no ask"),
        _num("mid", nullable=True, doc="(best_bid + best_ask) / 2; null when a side is empty"),
        _num("spread", nullable=True, doc="best_ask - best_bid (negative for a crossed book); null when a side "
                                          "is empty"),
        _num("best_bid_size", nullable=True, doc="size at the best bid"),
        _num("best_ask_size", nullable=True, doc="size at the best ask"),
        _num("bid_depth", required=True, doc="the YES book's bid sizes summed"),
        _num("ask_depth", required=True, doc="the YES book's ask sizes summed"),
        Field("bid_levels", dtype=pl.Int64(), required=True, doc="price levels on the YES book's bid side"),
        Field("ask_levels", dtype=pl.Int64(), required=True, doc="price levels on the YES book's ask side"),
        _num("min_order_size", doc="the smallest order the platform takes"),
        _num("tick_size", doc="the price increment"),
        Field("neg_risk", dtype=pl.Boolean(), doc="a leg of a negative-risk (mutually exclusive) group"),
    ),
)

_TRADER = _str("trader", required=True, doc="the watched trader, as the watch list names them: a wallet address "
                                            "(polymarket) or a nickname (kalshi)")

PROFILES = Table(
    name="profiles",
    resource="Profile and metrics",
    doc="The watched traders' profiles and trading metrics, as the API stated them when the day's partition was "
        "fetched (`_fetched_at`): one row per trader and day.",
    primary_key=("platform", "date", "trader"),
    time_column=None,
    sort_key=("trader",),
    listed_by_id=False,
    fields=(
        _TRADER,
        _PLATFORM,
        _str("user_id", doc="the platform's id of the trader"),
        _str("display_name"),
        _str("profile_image"),
        _str("description"),
        _iso("joined_at"),
        _num("follower_count"),
        _num("following_count"),
        _num("profile_view_count"),
        _num("volume", doc="notional the trader has traded"),
        _num("pnl", doc="profit and loss"),
        _num("roi", doc="return on investment: pnl over volume"),
        _num("num_markets_traded"),
        _num("portfolio_value", doc="value of the positions held"),
        _num("open_interest", doc="contracts held"),
    ),
)

PROFILE_TRADES = Table(
    name="profile_trades",
    resource="Trade",
    doc="The watched traders' trades whose timestamp falls in the day, read from their trade history "
        "(`/profile/trades`).",
    primary_key=("platform", "date", "trader", "trade_id"),
    time_column="timestamp",
    sort_key=("trader", "timestamp", "trade_id"),
    references_markets=False,
    fields=(_TRADER, *TRADES.fields),
)

# Tables landed from watch lists and snapshot rounds rather than from the day's catalogue: they are in the lake,
# the raw views, the checks and the docs like TABLES, but not in the daily ingestion (its job, backfill, status).
WATCHLIST_TABLES: dict[str, Table] = {
    t.name: t for t in (ORDERBOOK_LEVELS, ORDERBOOK_SNAPSHOTS, PROFILES, PROFILE_TRADES)}


# -- sports: leagues, teams, futures, awards and their odds, partitioned by league and day ------------------
# The unified API's sports endpoints (spec: League, Team, Future, Award, PlatformMarkets, Future detail). Each
# partition is the day's snapshot: what the API served when the partition ran (the odds are live, the API
# keeps no history), so a day is landed on that day.

SEASON = (_num("year"), _str("start_date", doc="YYYY-MM-DD"), _str("end_date", doc="YYYY-MM-DD"))
LEAGUE_ENDPOINTS = tuple(
    Field(name, dtype=pl.Boolean()) for name in ("awards", "futures", "games", "list_games", "list_awards",
                                                 "list_futures")
)
LEAGUE_COUNTS = (_num("teams"), _num("awards"), _num("futures"))
# A team's id on each platform that lists it (spec: platform_ids, keys P1, P2, P5, P6, P7).
TEAM_PLATFORM_IDS = tuple(_str(p.value) for p in SPORTS_PLATFORMS)
TEAM_METADATA = (_str("logo_url"), Field("colors", kind="list", dtype=pl.String()), _num("founded"), _str("stadium"))
# Each platform's market of a future or award (spec: PlatformMarkets); absent for a platform that lists none.
PLATFORM_MARKETS = (
    Field("polymarket", kind="struct", children=(_str("market_id"),
                                                 Field("clob_token_ids", kind="list", dtype=pl.String()))),
    Field("kalshi", kind="struct", children=(_str("event_ticker"),)),
    Field("prophetx", kind="struct", children=(_str("tournament_id"),)),
    Field("novig", kind="struct", children=(_str("market_slug"),)),
    Field("sxbet", kind="struct", children=(_num("league_id"),)),
)
FUTURE_METADATA = (_str("deadline"), _str("description"), Field("eligible_teams", kind="list", dtype=pl.String()))
AWARD_METADATA = (_str("deadline"), _str("description"), _str("eligibility"))
# A future's or award's detail (`/futures/{id}`): its markets, one per platform, each with its outcomes.
FUTURE_ODDS_FIELDS = (
    _str("american", required=True, doc="American odds as text: +350, 350 or -200"),
    _num("decimal", required=True),
    _num("implied_probability", required=True),
)
FUTURE_OUTCOME = (
    _str("outcome_name", required=True),
    Field("odds", kind="struct", children=FUTURE_ODDS_FIELDS, required=True),
    _str("team_router_id", nullable=True),
    _num("volume_24h", nullable=True),
    _num("last_trade_price", nullable=True),
    Field("metadata", kind="json"),
)
FUTURE_MARKET = (
    _str("platform", required=True, enum=tuple(SPORTS_PLATFORMS)),
    _str("market_id", required=True),
    Field("outcomes", kind="list", children=FUTURE_OUTCOME, required=True),
)
TEAM = (
    _str("router_id", required=True, doc="the service-wide team id that odds refer to"),
    _str("name", required=True),
    _str("abbreviation"),
    _str("city"),
    Field("platform_ids", kind="struct", children=TEAM_PLATFORM_IDS,
          doc="the team's id on each platform; null where the platform does not list it"),
    Field("metadata", kind="struct", children=TEAM_METADATA),
    _str("state"),
    _str("conference"),
    _str("division"),
)
_LEAGUE_WIRE = _str("league", doc="the league code; the stored `league` is the league the pipeline asked for")

LEAGUES = Table(
    name="leagues",
    resource="League",
    doc="The league as `/league-info` describes it on the day: season, endpoints served, counts, status.",
    primary_key=("league", "date", "id"),
    time_column=None,
    sort_key=("id",),
    partitioned_by="league",
    listed_by_id=False,
    fields=(
        _str("id", required=True, doc="league code as the API writes it"),
        _str("name", required=True),
        _str("abbreviation"),
        _str("sport"),
        Field("season", kind="struct", children=SEASON),
        Field("endpoints", kind="struct", children=LEAGUE_ENDPOINTS),
        Field("counts", kind="struct", children=LEAGUE_COUNTS),
        _str("status"),
    ),
    wire_only=(Field("teams", kind="list", children=TEAM, doc="the league's teams (with include_teams=true), landed "
                                                             "in `teams`"),),
)

TEAMS = Table(
    name="teams",
    resource="Team",
    doc="The league's teams on the day: each team's id on every platform that lists it, conference, division.",
    primary_key=("league", "date", "router_id"),
    time_column=None,
    sort_key=("router_id",),
    partitioned_by="league",
    listed_by_id=False,
    fields=TEAM,
)

FUTURES = Table(
    name="futures",
    resource="Future",
    doc="The league's futures (season-long questions: champion, conference, division) listed on the day, with "
        "each platform's market reference.",
    primary_key=("league", "date", "id"),
    time_column=None,
    sort_key=("id",),
    partitioned_by="league",
    listed_by_id=False,
    fields=(
        _str("id", required=True),
        _str("future_name", required=True),
        _num("season"),
        _str("future_type", doc="championship, conference, division, ..."),
        _str("category"),
        Field("platform_markets", kind="struct", children=PLATFORM_MARKETS,
              doc="each platform's market; null for a platform that does not list the future"),
        Field("metadata", kind="struct", children=FUTURE_METADATA),
    ),
    wire_only=(_LEAGUE_WIRE,),
)

AWARDS = Table(
    name="awards",
    resource="Award",
    doc="The league's awards (MVP, ...) listed on the day, with each platform's market reference.",
    primary_key=("league", "date", "id"),
    time_column=None,
    sort_key=("id",),
    partitioned_by="league",
    listed_by_id=False,
    fields=(
        _str("id", required=True),
        _str("award_name", required=True),
        _num("season"),
        _str("award_type", doc="mvp, dpoy, opoy, ..."),
        Field("platform_markets", kind="struct", children=PLATFORM_MARKETS),
        Field("metadata", kind="struct", children=AWARD_METADATA),
    ),
    wire_only=(_LEAGUE_WIRE,),
)


class OddsKind(StrEnum):
    """What a row of `future_odds` prices: a future or an award (both read as a future's detail)."""

    FUTURE = "future"
    AWARD = "award"


FUTURE_ODDS = Table(
    name="future_odds",
    resource="Future detail outcome",
    doc="The day's snapshot of the odds of every future and award: one row per platform, market and outcome, "
        "from `/futures/{id}` (and `/awards/{id}`).",
    primary_key=("league", "date", "kind", "future_id", "platform", "market_id", "outcome_name"),
    time_column=None,
    sort_key=("kind", "future_id", "platform", "market_id", "outcome_name"),
    partitioned_by="league",
    listed_by_id=False,
    references_markets=False,
    fields=(
        _str("kind", required=True, enum=tuple(OddsKind), doc="future or award"),
        _str("future_id", required=True, doc="the future's or award's id the pipeline asked the detail of"),
        _str("platform", required=True, enum=tuple(SPORTS_PLATFORMS), doc="the platform pricing the outcome"),
        _str("market_id", required=True, doc="the platform's market (`markets[].market_id`)"),
        _str("outcome_name", required=True),
        _str("team_router_id", nullable=True, doc="the team the outcome is (a future) or plays for (an award)"),
        _str("american_odds", required=True,
             doc="`odds.american`, signed (`+350`, `-200`) whether sent with `+` or not"),
        _num("decimal_odds", required=True, doc="`odds.decimal`"),
        _num("implied_probability", required=True,
             doc="`odds.implied_probability`: the platform's price, its margin included"),
        _num("volume_24h", nullable=True),
        _num("last_trade_price", nullable=True),
        Field("metadata", kind="json", doc="free-form object, as JSON text"),
    ),
)

SPORTS_TABLES: dict[str, Table] = {t.name: t for t in (LEAGUES, TEAMS, FUTURES, AWARDS, FUTURE_ODDS)}


# -- what the service says about itself: /health and /platforms, observed on every ingestion run ------------
# The unified API's Platform list item and Health object (spec: Platform, Health), read as served; the statuses
# are free text whose only documented values are the samples (`available`, `pass`, `healthy`).
PLATFORM_HEALTH = (_str("status"), _iso("last_check"), _num("response_time_ms"))
PLATFORM_ENDPOINT = (_str("name"), Field("available", dtype=pl.Boolean()))
PLATFORM_FEATURES = tuple(Field(name, dtype=pl.Boolean())
                          for name in ("orderbook", "trades", "historical_data", "user_profiles"))
PLATFORM_FIELDS: tuple[Field, ...] = (
    _str("id", required=True),
    _str("name"),
    _str("status"),
    Field("health", kind="struct", children=PLATFORM_HEALTH),
    Field("endpoints", kind="list", children=PLATFORM_ENDPOINT),
    Field("features", kind="struct", children=PLATFORM_FEATURES),
)
HEALTH_CHECK = (_str("name"), _str("status"), _num("response_time_ms"))
HEALTH_FIELDS: tuple[Field, ...] = (
    _str("status"),
    Field("checks", kind="list", children=HEALTH_CHECK),
    _num("uptime"),
    _str("version"),
    _iso("timestamp"),
)

PLATFORM_STATUS = Table(
    name="platform_status",
    resource="Platform and Health",
    doc="What the unified API says about itself: each ingestion run's observation of `/platforms` (the run's "
        "platform) and `/health`, one row per observation, kept in the partition of the day it was made (not "
        "the run's day): earlier observations are never rewritten.",
    primary_key=("platform", "date", "observed_at"),
    time_column="observed_at",
    sort_key=("observed_at",),
    listed_by_id=False,
    rounds=True,
    references_markets=False,
    fields=(
        Field("observed_at", kind="timestamp", required=True,
              doc="when the run asked `/health` and `/platforms` (UTC, to the second)"),
        _PLATFORM,
        Field("listed", dtype=pl.Boolean(), required=True, doc="whether `/platforms` listed the platform"),
        Field("held", dtype=pl.Boolean(), required=True,
              doc="whether the platform's `status` reads as unavailable, so that the schedule, the backfill "
                  "sensor and `pmw backfill` hold its runs (docs/deployment.md)"),
        _str("name", doc="the platform's name as listed"),
        _str("status", doc="the platform's status as listed (the spec's sample: available)"),
        _str("health_status", doc="`health.status` (the spec's sample: pass)"),
        _iso("health_last_check", doc="`health.last_check`"),
        _num("health_response_time_ms", doc="`health.response_time_ms`"),
        Field("endpoints", kind="list", children=PLATFORM_ENDPOINT, doc="each endpoint and whether it is available"),
        Field("features", kind="struct", children=PLATFORM_FEATURES),
        _str("service_status", doc="`/health` status, the whole service's (the spec's sample: healthy)"),
        _str("service_version", doc="`/health` version"),
        Field("service_checks", kind="list", children=HEALTH_CHECK, doc="`/health` checks"),
        _str("error", doc="why `/platforms` or `/health` could not be read, or the platform's item was refused; "
                          "null when both answered"),
    ),
)

# Tables of what the service says about itself, landed by every ingestion run beside its partition's tables.
STATUS_TABLES: dict[str, Table] = {PLATFORM_STATUS.name: PLATFORM_STATUS}


def lake_tables() -> dict[str, Table]:
    """Every table of the lake and the warehouse's raw views: the daily ingestion's (TABLES) and the watch lists'
    (WATCHLIST_TABLES) and the service's own status (STATUS_TABLES), partitioned by platform and day, then the sports
    tables (SPORTS_TABLES, league x day). Read at each call, so that a table added to any registry (as
    tests/architecture's recipe does) is seen."""
    return {**TABLES, **WATCHLIST_TABLES, **STATUS_TABLES, **SPORTS_TABLES}


# How far the sports checks let the odds stray, and why (pipeline.engine.checks):
# - an implied probability is 1 / decimal odds and the American odds say the same price, within rounding: the API
#   rounds decimal odds to cents and American odds to whole numbers, which moves a price by well under 1 %;
IMPLIED_PROBABILITY_RELATIVE_TOLERANCE = 0.01
# - a platform's implied probabilities of one future sum to 1 plus its margin; a platform may leave long shots
#   out, and a sum below 1 - this tolerance means outcomes that matter are missing.
OVERROUND_TOLERANCE = 0.05

# Envelopes and small objects of the unified API that are not warehouse tables.
PAGINATION_FIELDS: tuple[Field, ...] = (
    _num("total", required=True),
    _num("limit", required=True),
    Field("has_more", dtype=pl.Boolean(), required=True),
    _str("next_cursor", required=True, nullable=True),
)
ERROR_FIELDS: tuple[Field, ...] = (
    _str("code", required=True),
    _str("message", required=True),
    _str("timestamp", required=True),
    Field("details", kind="json", doc="optional extra information, e.g. retry_after"),
)
ORDERBOOK_LEVEL: tuple[Field, ...] = (_num("price", required=True), _num("size", required=True, non_negative=True))
ORDERBOOK_SIDE: tuple[Field, ...] = (
    Field("bids", kind="list", children=ORDERBOOK_LEVEL, required=True),
    Field("asks", kind="list", children=ORDERBOOK_LEVEL, required=True),
    _num("depth", required=True),
)
ORDERBOOK_FIELDS: tuple[Field, ...] = (
    _str("market_id", required=True),
    _str("platform", required=True),
    _str("timestamp", required=True),
    Field("yes", kind="struct", children=ORDERBOOK_SIDE, required=True),
    Field("no", kind="struct", children=ORDERBOOK_SIDE, required=True),
    Field(
        "metadata",
        kind="struct",
        required=True,
        children=(
            _num("min_order_size", required=True),
            _num("tick_size", required=True),
            Field("neg_risk", dtype=pl.Boolean(), required=True),
        ),
    ),
)

_LIST_META = ("platforms_queried", "request_time", "cache_hit", "data_freshness")
META_FIELDS: dict[str, tuple[str, ...]] = {
    "series": _LIST_META,
    "events": _LIST_META,
    "markets": _LIST_META,
    "event": ("request_time", "cache_hit", "data_freshness"),
    "market": ("request_time", "cache_hit", "data_freshness"),
    "trades": ("request_time", "market_id", "platform", "data_freshness"),
    "price_history": (
        "total_points",
        "platforms",
        "time_range",
        "interval",
        "request_time",
        "cache_hit",
        "data_freshness",
    ),
    "orderbook": ("request_time",),
    "health": ("request_time",),
    "platforms": ("request_time", "total"),
    "league_info": ("request_time",),
    "sports": ("platforms_queried", "request_time", "data_freshness", "platform_errors"),
}

# Maximum `limit` per list endpoint; a larger value is capped to it (spec: Limits).
MAX_LIMIT: dict[str, int] = {
    "series": 100,
    "events": 100,
    "markets": 250,
    "trades": 1000,
    "price_history": 5000,
    "profile_trades": 100,
}
# The stated maxima disagree between the spec's references: the pagination guide says 1 to 25 for series and
# events, earlier change records 25 for markets. A server may refuse a `limit` above its own maximum instead of
# capping it; the pipeline then pages at these.
LOWEST_DOCUMENTED_LIMIT: dict[str, int] = {"series": 25, "events": 25, "markets": 25}
MAX_PRICE_HISTORY_MARKETS = 10
PRICE_HISTORY_INTERVALS: tuple[int, ...] = (1, 60, 1440)


def wire_names(fields: tuple[Field, ...]) -> set[str]:
    return {f.wire for f in fields}

