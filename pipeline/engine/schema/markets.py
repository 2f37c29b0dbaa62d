"""The daily ingestion's tables, partitioned by platform and day: series, events, markets, trades and price
history, each the unified API's resource (spec: Series, Event, Market, Trade, Price-history point) plus the
columns the platforms' own APIs add."""

from __future__ import annotations

import polars as pl

from pipeline.engine.schema.core import (
    PLATFORM_FIELD,
    SERVED_MARKET_ID,
    UTC_TIMESTAMP,
    Column,
    Field,
    MarketStatus,
    MarketType,
    Table,
    iso_time,
    number,
    string,
    unix_time,
)

# Nested objects (spec: Outcome, PriceDetail, LastTradeInfo, MarketMetadata, OHLC, user).
OUTCOME = (string("id", required=True), string("name", required=True))
PRICE_DETAIL = (number("price", required=True), number("bid"), number("ask"))
LAST_TRADE_INFO = (
    number("price", required=True),
    iso_time("timestamp", required=True),
    number("size", required=True, non_negative=True),
)
MARKET_METADATA = (
    string("conditionId", nullable=True),
    string("ammType", nullable=True),
    string("marketType", nullable=True),
    string("formatType", nullable=True),
    number("competitive"),
    number("score"),
    number("bestBid"),
    number("bestAsk"),
    number("spread"),
    Field("clobTokenIds", kind="list", dtype=pl.String(), nullable=True),
)
OHLC = (number("open"), number("high"), number("low"), number("close"))
TRADE_USER = (string("name"), string("pseudonym"), string("profile_image"))


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
        string("id", required=True, doc="series id on its platform"),
        PLATFORM_FIELD,
        string("platform_id", required=True),
        string("title", required=True),
        iso_time("last_synced_at", required=True),
        string("slug"),
        string("description"),
        string("image_url"),
        string("category"),
        Field("tags", kind="list", dtype=pl.String()),
        number("event_count"),
        number("market_count"),
        number("total_volume"),
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
        string("id", required=True),
        PLATFORM_FIELD,
        string("platform_id", required=True),
        string("title", required=True),
        iso_time("last_synced_at", required=True),
        string("series_id"),
        string("slug"),
        string("description"),
        string("image_url"),
        string("resolution_source_url"),
        iso_time("event_start_at"),
        iso_time("event_end_at"),
        number("market_count"),
        number("total_volume"),
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
        string("id", required=True),
        PLATFORM_FIELD,
        string("platform_id", required=True),
        string("event_id"),
        string("event_name"),
        string("event_slug", nullable=True),
        string("series_id"),
        string("slug"),
        string("market_slug"),
        string("title", required=True),
        string("description"),
        string("category"),
        string("subcategory", nullable=True),
        Field("tags", kind="list", dtype=pl.String(), nullable=True),
        string("status", required=True, enum=tuple(MarketStatus)),
        string("market_type", required=True, enum=tuple(MarketType)),
        Field("outcomes", kind="list", children=OUTCOME, required=True),
        Field("current_prices", kind="map", children=PRICE_DETAIL, required=True, doc="outcome key -> price detail"),
        number("volume_24h", nullable=True, doc=_CURRENCY),
        number("volume_7d", nullable=True),
        number("volume_total", nullable=True, doc=_CURRENCY),
        number("liquidity", nullable=True),
        number("liquidity_score"),
        number("open_interest", nullable=True, doc=_CURRENCY),
        number("unique_traders", nullable=True),
        number("fee_rate", nullable=True),
        number("trading_fee", nullable=True),
        number("withdrawal_fee", nullable=True),
        string("source_url"),
        string("image_url"),
        iso_time("created_at"),
        iso_time("trading_start_at", nullable=True),
        iso_time("trading_end_at", doc="when trading ended, for a closed market (Polymarket `closedTime`, before or "
             "after `endDate`); for one still open, its scheduled end (Polymarket `endDate`, Kalshi `close_time`, "
             "the unified API's value), which it may outlive (Gamma keeps a market open past `endDate` until it "
             "closes it): no evidence that trading stopped, so liveness reads `status` open instead"),
        iso_time("resolution_date", doc="the scheduled end, when resolution is expected (Polymarket `endDate`, kept "
             "whenever the market closes)"),
        iso_time("resolved_at", nullable=True),
        string("resolution_criteria", nullable=True),
        string("resolution_source", nullable=True),
        Field("price_24h_changes", kind="map", dtype=pl.Float64(), nullable=True),
        Field("price_7d_changes", kind="map", dtype=pl.Float64(), nullable=True),
        Field("last_trades", kind="map", children=LAST_TRADE_INFO, nullable=True),
        Field("metadata", kind="struct", children=MARKET_METADATA),
        iso_time("last_synced_at", required=True),
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
        string("trade_id", required=True),
        string("market_id", required=True),
        PLATFORM_FIELD,
        string("side", doc="buy or sell"),
        number("price", required=True),
        number("size", required=True, non_negative=True),
        unix_time("timestamp", required=True),
        string("outcome"),
        Field("taker", dtype=pl.Boolean()),
        string("transaction_hash"),
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
        unix_time("timestamp", required=True),
        Field("price", kind="struct", children=OHLC, required=True,
              doc="the traded price over the period (a point fills close only); on the platforms' own APIs a "
                  "period without trades closes at the last price before it, so that a market's series has no "
                  "holes (the direct mappings below say how)"),
        PLATFORM_FIELD,
        string("marketId", required=True),
        number("volume", doc="traded in the period (Kalshi: contracts); 0 says the period had no trade"),
        number("openInterest"),
        Field(
            "bidAsk",
            kind="struct",
            children=(
                Field("bid", kind="struct", children=OHLC),
                Field("ask", kind="struct", children=OHLC),
            ),
        ),
        string("outcomeId", required=True),
    ),
)

TABLES: dict[str, Table] = {t.name: t for t in (SERIES, EVENTS, MARKETS, TRADES, PRICE_HISTORY)}
