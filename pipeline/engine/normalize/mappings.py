"""How the platforms' own responses map onto the warehouse tables: the tables docs/schema.md renders.

The status and market-type tables are read by the normalisers (pipeline.engine.normalize.polymarket, .kalshi), so
the docs cannot say one thing while the code does another; the column tables are held to what the
normalisers fill by tests/engine/normalize/test_native.py. `python -m scripts.generate_docs` renders them.
"""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.engine.schema import MarketStatus, MarketType, Platform

OPEN, PAUSED, RESOLVED, CANCELLED = (
    MarketStatus.OPEN,
    MarketStatus.PAUSED,
    MarketStatus.RESOLVED,
    MarketStatus.CANCELLED,
)


@dataclass(frozen=True)
class ColumnSource:
    """Where one warehouse column comes from: the native field(s) and the rule or unit, in Markdown."""

    column: str
    native: str
    note: str = ""


@dataclass(frozen=True)
class EntityMapping:
    """What one native endpoint's records become: a table, column by column (unnamed columns stay null)."""

    platform: Platform
    entity: str  # the `entity` of `normalise_native`
    endpoint: str
    table: str
    columns: tuple[ColumnSource, ...]


@dataclass(frozen=True)
class StatusRule:
    """A Polymarket status rule: the flags (POLYMARKET_FLAGS) it tests, each with the value it needs."""

    when: tuple[tuple[str, bool], ...]
    status: MarketStatus
    why: str


@dataclass(frozen=True)
class KalshiStatus:
    native: str
    status: MarketStatus
    why: str


SYNCED = ColumnSource("last_synced_at", "none", "the fetch time (`fetched_at`): when the platform was read")

# -- Polymarket ------------------------------------------------------------------------------------------

POLYMARKET_FLAGS: dict[str, str] = {
    "closed": "`closed`",
    "settled": "`umaResolutionStatus` is `resolved`, or the final `outcomePrices` record a payout: prices in [0, 1] "
    "summing to 1 with one outcome at 1 (a winner), all equal (a 50-50), or any such split for a scalar market (its "
    "fractional payout)",
    "split": "the `outcomePrices` are all equal and sum to 1 (a 50-50 payout)",
    "scalar": "`marketType` is `scalar`",
    "acceptingOrders": "`acceptingOrders` (absent counts as true)",
    "active": "`active`",
}

# Read in order; the first rule whose flags all match gives the status. A closed market never trades again
# (Gamma's `closed`), so none is `paused`, which says trading may resume.
POLYMARKET_STATUS_RULES: tuple[StatusRule, ...] = (
    StatusRule(
        (("closed", True), ("settled", True), ("split", True)),
        CANCELLED,
        "Polymarket's rules resolve a cancelled, tied or void event 50-50",
    ),
    StatusRule((("closed", True), ("settled", True)), RESOLVED, "an outcome won, or a scalar paid its fraction"),
    StatusRule(
        (("closed", True),),
        RESOLVED,
        "closed without a payout on record, no winner known: legacy (2020-2022) markets whose `outcomePrices` Gamma "
        "reset to 0 and 0, or a resolution still pending at UMA; trading is over either way",
    ),
    StatusRule((("acceptingOrders", False),), PAUSED, "listed, but the book takes no orders"),
    StatusRule((("active", True),), OPEN, "trading"),
    StatusRule((), PAUSED, "neither active nor closed: not yet live, or halted"),
)

POLYMARKET_MARKET_TYPES: tuple[tuple[str, MarketType], ...] = (
    ("`marketType` is `scalar`", MarketType.SCALAR),
    ("otherwise, 2 outcomes", MarketType.BINARY),
    ("otherwise, 3 or more outcomes (fewer than 2: rejected)", MarketType.CATEGORICAL),
)

# Both platforms write an empty side of a book as a price no order rests at (Kalshi quotes 1 to 99 cents,
# Polymarket's CLOB one tick above 0 to one tick below 1).
_EMPTY_SIDE = "A bid or ask of 0 or 1 is an empty side of the book, no quote: null."

# Polymarket's top-level categories (the sections of its site), in the order of preference when an event carries
# several of them as tags. Gamma no longer fills `category` on modern markets: the event's tags carry it.
POLYMARKET_CATEGORIES: tuple[str, ...] = (
    "Sports", "Crypto", "Politics", "Geopolitics", "Elections", "Economy", "Finance", "Business", "Tech", "Science",
    "Climate", "Weather", "Culture", "Mentions", "World",
)
_CATEGORY_RULE = (
    "the first of " + ", ".join(f"`{c}`" for c in POLYMARKET_CATEGORIES) + " found among the tag labels (any case)"
)
# docs.polymarket.com, "How are prices calculated?": the price shown is the midpoint of the book, unless the
# spread is over $0.10, in which case it is the last traded price.
POLYMARKET_WIDE_SPREAD = 0.10
_DOCS = "docs.polymarket.com"

_GAMMA_EVENT = "`events[0]`: the parent event (nested by `/markets`; for markets nested in `/events`, the event itself)"

POLYMARKET: tuple[EntityMapping, ...] = (
    EntityMapping(
        Platform.POLYMARKET,
        "series",
        "Gamma `GET /series` (array, or one object)",
        "series",
        (
            ColumnSource("id", "`id`"),
            ColumnSource("platform_id", "`id`"),
            ColumnSource("title", "`title`"),
            ColumnSource("slug", "`slug`"),
            ColumnSource("description", "`description`"),
            ColumnSource("image_url", "`image`", "an empty string is null"),
            ColumnSource("category", "`tags[].label`", _CATEGORY_RULE),
            ColumnSource("tags", "`tags[].label`"),
            ColumnSource("event_count", "length of `events`", "only when the series nests its events"),
            ColumnSource("total_volume", "`volume`", "USDC"),
            SYNCED,
        ),
    ),
    EntityMapping(
        Platform.POLYMARKET,
        "events",
        "Gamma `GET /events` (array, or one object); nested `markets` go to `markets`",
        "events",
        (
            ColumnSource("id", "`id`"),
            ColumnSource("platform_id", "`id`"),
            ColumnSource("title", "`title`"),
            ColumnSource(
                "series_id",
                "`series[0].id`, else `seriesSlug`",
                "the series' slug when the event nests no series (staging resolves it to the series' id); null "
                "without either",
            ),
            ColumnSource("slug", "`slug`"),
            ColumnSource("description", "`description`"),
            ColumnSource("image_url", "`image`"),
            ColumnSource("resolution_source_url", "`resolutionSource`", "an empty string is null"),
            ColumnSource(
                "event_start_at",
                "`startTime`, else `startDate`",
                "when the real-world event starts (a game, an election day; `startTime` may fall after `endDate`); "
                "without it, `startDate`, when the event was listed",
            ),
            ColumnSource("event_end_at", "`endDate`"),
            ColumnSource(
                "market_count",
                "length of `markets`, less its placeholder legs",
                "only when the event nests its markets; the unnamed legs of a negative-risk event "
                "(markets' `placeholder`) are no markets of it yet and are not counted",
            ),
            ColumnSource("total_volume", "`volume`", "USDC"),
            ColumnSource(
                "mutually_exclusive", "`negRisk`", "a negative-risk event: at most one of its markets resolves Yes"
            ),
            SYNCED,
        ),
    ),
    EntityMapping(
        Platform.POLYMARKET,
        "markets",
        "Gamma `GET /markets` (array, or one object), and the markets nested in `GET /events`",
        "markets",
        (
            ColumnSource("id", "`id`", "Gamma's numeric market id, as a string"),
            ColumnSource("platform_id", "`conditionId`"),
            ColumnSource("event_id", "`events[0].id`", _GAMMA_EVENT),
            ColumnSource("event_name", "`events[0].title`"),
            ColumnSource("event_slug", "`events[0].slug`"),
            ColumnSource(
                "series_id",
                "`events[0].series[0].id`, else `events[0].seriesSlug`",
                "the series' slug when the event nests no series (Gamma's `/markets` leaves it out): the direct "
                "source asks `/series` by that slug and staging resolves it to the series' id; null without either",
            ),
            ColumnSource("slug", "`slug`"),
            ColumnSource("market_slug", "`slug`"),
            ColumnSource("title", "`question`"),
            ColumnSource("description", "`description`", "Polymarket's description is the resolution rules"),
            ColumnSource(
                "category",
                "`category`, else `events[0].category`, else `events[0].tags[].label`, else `sportsMarketType`",
                f"Gamma stopped filling `category`; from the event's tags, {_CATEGORY_RULE}; else `Sports` for a "
                "market with a `sportsMarketType` (a game's moneyline, spread, total); else null (the series' "
                "category, from its tags, fills `dim_markets`)",
            ),
            ColumnSource("tags", "`events[0].tags[].label`"),
            ColumnSource(
                "status",
                "`closed`, `umaResolutionStatus`, `outcomePrices`, `marketType`, `acceptingOrders`, `active`",
                "see the status rules below",
            ),
            ColumnSource("market_type", "`marketType`, the number of outcomes", "see the market-type rules below"),
            ColumnSource(
                "outcomes",
                "`outcomes` (names) and `clobTokenIds` (ids)",
                "JSON arrays inside strings; outcome i is `{id: clobTokenIds[i], name: outcomes[i]}`, "
                "the id is the CLOB token id (a uint256 in decimal) kept as text, or the name when the market "
                "has no tokens",
            ),
            ColumnSource(
                "current_prices",
                "`outcomePrices`, `spread`, `bestBid`, `bestAsk`, `lastTradePrice`, `closed`",
                "keyed by token id; the price Polymarket displays: `outcomePrices[i]` (a decimal string: the "
                "book's midpoint), except that an open market whose first outcome's spread is wider than "
                f"{POLYMARKET_WIDE_SPREAD:.2f} shows its last trade, `lastTradePrice`, and a two-outcome market's "
                f"other outcome 1 minus it ({_DOCS}, How are prices calculated). The spread is Gamma's `spread`, "
                "which counts an empty side as a bid of 0 or an ask of 1 (no bid against an ask of 0.001 is a "
                "spread of 0.001, and Polymarket shows the midpoint 0.0005), else `bestAsk` - `bestBid` counted "
                "the same way. `lastTradePrice` and `outcomePrices` can both be read as \"the price\": the column "
                "takes the one Polymarket shows, so that it matches the site; the last trade is kept in "
                "`last_trade_price`. A "
                "closed market keeps its final `outcomePrices` (the payout). Prices all 0 (`[\"0\", \"0\"]`, "
                "left by Gamma on legacy closed markets) are placeholders: an empty map, no 0% probability, as "
                "when Gamma sends no prices. Bid and ask are the first outcome's book only, and none once the "
                "market is closed (what Gamma still sends then is the book as it stood at the close). "
                f"{_EMPTY_SIDE}",
            ),
            ColumnSource(
                "volume_24h",
                "`volume24hr`",
                "USDC; Gamma leaves a zero out, so an absent value is 0 on a market that reports its "
                "volume (`volume` or `volumeNum`), else null",
            ),
            ColumnSource("volume_7d", "`volume1wk`", "USDC; absent is 0 as for volume_24h"),
            ColumnSource(
                "volume_total",
                "`volume` (a decimal string), else `volumeNum`",
                "USDC; the string is exact where its float twin may be rounded",
            ),
            ColumnSource("liquidity", "`liquidity` (a decimal string), else `liquidityNum`", "USDC"),
            ColumnSource(
                "fee_rate",
                "`feeSchedule.rate`",
                "the rate of Polymarket's taker fee: a fee on shares x rate, scaled by the price's distance from "
                "the extremes (p(1-p), shaped by `feeSchedule.exponent`, so it peaks at p = 0.5); makers pay none "
                f"when `feeSchedule.takerOnly` ({_DOCS}/trading/fees); null for a market without fees",
            ),
            ColumnSource("image_url", "`image`"),
            ColumnSource("resolution_source", "`resolutionSource`", "an empty string is null"),
            ColumnSource("created_at", "`createdAt`"),
            ColumnSource(
                "trading_start_at",
                "`startDate`, else `events[0].startDate`, else `createdAt`",
                "when trading opened; a market without `startDate` (legacy markets) opened with its event, else "
                "when it was created",
            ),
            ColumnSource(
                "trading_end_at",
                "`endDate`, `closedTime`",
                "a closed market's `closedTime` (its close, before or after `endDate`: Gamma keeps a market open "
                "past its `endDate` until it closes it); else `endDate`, the scheduled end an open market may "
                "outlive (the day's liveness reads `status` open, not this time)",
            ),
            ColumnSource("resolution_date", "`endDate`", "the scheduled end, when resolution is expected"),
            ColumnSource(
                "resolved_at",
                "`closedTime`",
                "only when closed (written "
                "`2026-05-09 02:07:01+00`); Gamma sends no resolution time, the close is the nearest",
            ),
            ColumnSource(
                "metadata",
                "`conditionId`, `marketType`, `competitive`, `bestBid`, `bestAsk`, `spread`, `clobTokenIds`",
                "into condition_id, market_type, competitive, best_bid, "
                "best_ask, spread, clob_token_ids; amm_type, format_type and score stay null. A dead book's "
                "`bestBid` 0 and `bestAsk` 1 are null, so are a closed market's, and so is `spread` unless both "
                "sides are quoted",
            ),
            ColumnSource(
                "outcome_label",
                "`groupItemTitle`",
                "the market's label among its event's markets (a candidate, a bracket); an empty string is null",
            ),
            ColumnSource("lower_bound", "`lowerBound` (a decimal string; a JSON number is read too)",
                         "a scalar market's low end"),
            ColumnSource("upper_bound", "`upperBound` (a decimal string; a JSON number is read too)",
                         "a scalar market's high end"),
            ColumnSource(
                "last_trade_price",
                "`lastTradePrice`",
                "the first outcome's; 0 (never traded) is null",
            ),
            ColumnSource("mutually_exclusive", "`negRisk`", "a leg of a negative-risk event"),
            ColumnSource("neg_risk_market_id", "`negRiskMarketID`", "the negative-risk group shared by the legs"),
            ColumnSource("fee_type", "`feeType`", "e.g. `sports_fees_v2`, `crypto_fees`"),
            ColumnSource(
                "event_start_at",
                "`eventStartTime`, else `gameStartTime` on a game",
                "the real-world start (a game's). `gameStartTime` (written `2026-05-08 20:00:00+00`) is a start "
                "only on a game, a market with a `sportsMarketType` or a `gameId`: Gamma leaves one on other "
                "markets too (an editing time shared by unrelated markets), which is no start, so they have none",
            ),
            ColumnSource(
                "placeholder",
                "`negRisk`, `active`, `outcomePrices`, `volume`",
                "true for an unnamed leg of a negative-risk event (\"Person A\", an undefined \"Other\"): "
                "`negRisk`, not `active`, no `outcomePrices` and no volume; Polymarket lists such legs until it "
                f"names them ({_DOCS}/advanced/neg-risk, augmented negative risk); false otherwise",
            ),
            ColumnSource(
                "settlement_value",
                "`outcomePrices[0]`",
                "once closed with a payout on record (see `settled` below): what a share of the first outcome "
                "paid (1 or 0, a scalar's fraction, 0.5 when cancelled)",
            ),
            SYNCED,
        ),
    ),
    EntityMapping(
        Platform.POLYMARKET,
        "trades",
        "Data API `GET /trades`: camelCase bare array, or snake_case `{data, pagination}`",
        "trades",
        (
            ColumnSource(
                "trade_id",
                "`transactionHash`, `asset`",
                "`{transactionHash}-{asset}-{n}`, n counting from 0 the response's trades of that "
                "transaction and token, in response order",
            ),
            ColumnSource(
                "market_id",
                "context `market_id`, else `conditionId`",
                "with `conditionId`, trades point at `markets.platform_id`",
            ),
            ColumnSource("side", "`side`", "lower-cased: `buy` or `sell`"),
            ColumnSource(
                "price",
                "`price`",
                "USDC per share of the traded token, rounded to 6 decimals: the Data API sends the ratio of two "
                "6-decimal amounts as a float (0.709999959 for a fill at 0.71)",
            ),
            ColumnSource("size", "`size`", "shares"),
            ColumnSource("timestamp", "`timestamp`", "Unix seconds"),
            ColumnSource("outcome", "`outcome`", "the traded token's outcome name"),
            ColumnSource("transaction_hash", "`transactionHash`"),
            ColumnSource(
                "taker",
                "context `taker_only`",
                "true when the trades were asked with `takerOnly=true` (the direct source does): the Data API then "
                "returns only the taker's row of each match, so a match is one row; with `takerOnly=false` it "
                "adds the makers' rows of the same match, which the response does not tell apart (null)",
            ),
            ColumnSource(
                "user",
                "`name`, `pseudonym`, `profileImage`",
                "null when all three are absent or empty (an anonymous trader)",
            ),
            ColumnSource(
                "metadata",
                "`asset`, `conditionId`, `outcomeIndex`, `proxyWallet`",
                "JSON text `{asset, condition_id, outcome_index, proxy_wallet}`; the snake_case "
                "shape's `token_id` is the asset",
            ),
        ),
    ),
    EntityMapping(
        Platform.POLYMARKET,
        "price_history",
        "CLOB `GET /prices-history` (`{history: [{t, p}]}`, one token)",
        "price_history",
        (
            ColumnSource("timestamp", "`t`", "Unix seconds: the point's time"),
            ColumnSource("price", "`p`", "close only; open, high and low stay null (a point is no candle)"),
            ColumnSource("market_id", "context `market_id`", "the response does not name it"),
            ColumnSource("outcome_id", "context `outcome_id`", "the token id the history was asked for"),
        ),
    ),
)

# -- Kalshi ------------------------------------------------------------------------------------------------

KALSHI_STATUSES: tuple[KalshiStatus, ...] = (
    KalshiStatus("initialized", PAUSED, "created, not yet open"),
    KalshiStatus("inactive", PAUSED, "trading halted"),
    KalshiStatus("active", OPEN, "trading"),
    KalshiStatus("open", OPEN, "older name of active"),
    KalshiStatus("closed", PAUSED, "trading ended, outcome not yet determined"),
    KalshiStatus("determined", RESOLVED, "outcome determined, settlement pending"),
    KalshiStatus("disputed", PAUSED, "the determined outcome is contested: not final"),
    KalshiStatus("amended", RESOLVED, "outcome corrected after a dispute"),
    KalshiStatus("finalized", RESOLVED, "settled"),
    KalshiStatus("settled", RESOLVED, "older name of finalized"),
)
KALSHI_STATUS: dict[str, MarketStatus] = {s.native: s.status for s in KALSHI_STATUSES}
KALSHI_VOIDED = (
    "A status that maps to `resolved` with an empty `result` (neither yes, no nor scalar) becomes `cancelled`: "
    "the market settled without an outcome."
)
KALSHI_MARKET_TYPES: dict[str, MarketType] = {"binary": MarketType.BINARY, "scalar": MarketType.SCALAR}

_DOLLARS = "`{name}_dollars` (else `{name}` cents / 100)"
_COUNT = "`{name}_fp` (else `{name}`)"


def _dollars(name: str) -> str:
    return _DOLLARS.format(name=name)


def _count(name: str) -> str:
    return _COUNT.format(name=name)


_PARENT = "the parent event's"
# Kalshi keeps sending a market's last book after trading ends; once the result is known it is no price anyone can
# trade at.
_KALSHI_DEAD_BOOK = (
    "Once the result is known (a status that maps to `resolved` or `cancelled`, or `result` set), bid and ask are "
    "null: the book Kalshi still sends is the one of the close, and the price is the payout."
)
# Kalshi's documentation the Kalshi rules follow (trade-api v2, docs.kalshi.com; its OpenAPI schema).
_KALSHI_MARKET_DOC = "Kalshi's Market schema (`GET /markets`)"
_KALSHI_TRADE_DOC = "Kalshi's Trade schema (`GET /markets/trades`)"

KALSHI: tuple[EntityMapping, ...] = (
    EntityMapping(
        Platform.KALSHI,
        "series",
        "`GET /series` (`{series: [...]}`) and `GET /series/{ticker}` (`{series: {...}}`)",
        "series",
        (
            ColumnSource("id", "`ticker`"),
            ColumnSource("platform_id", "`ticker`"),
            ColumnSource("title", "`title`"),
            ColumnSource("category", "`category`"),
            ColumnSource("tags", "`tags`"),
            ColumnSource("fee_type", "`fee_type`", "as sent (`quadratic`, `quadratic_with_maker_fees`, `flat`): "
                         "the formula of the series' trading fees (Kalshi's Series schema)"),
            ColumnSource("fee_multiplier", "`fee_multiplier`", "the formula's multiplier (Kalshi's Series schema)"),
            SYNCED,
        ),
    ),
    EntityMapping(
        Platform.KALSHI,
        "events",
        "`GET /events` (`{events}`, nested `markets` with `with_nested_markets`) and `GET /events/{ticker}` "
        "(`{event, markets}`); the markets go to `markets`",
        "events",
        (
            ColumnSource("id", "`event_ticker`"),
            ColumnSource("platform_id", "`event_ticker`"),
            ColumnSource("title", "`title`"),
            ColumnSource("series_id", "`series_ticker`"),
            ColumnSource("market_count", "length of `markets`", "only when the markets come with the event"),
            ColumnSource(
                "mutually_exclusive", "`mutually_exclusive`",
                "at most one of the event's markets resolves yes (Kalshi's Event schema). `event_start_at` stays "
                "null: Kalshi documents no start time for an event or a market (`strike_date` and markets' "
                "undocumented `occurrence_datetime` date the outcome, not a start)",
            ),
            SYNCED,
        ),
    ),
    EntityMapping(
        Platform.KALSHI,
        "markets",
        "`GET /markets` (`{markets}`), `GET /markets/{ticker}` (`{market}`) and the markets of `events`",
        "markets",
        (
            ColumnSource("id", "`ticker`"),
            ColumnSource("platform_id", "`ticker`"),
            ColumnSource("event_id", "`event_ticker`"),
            ColumnSource("event_name", f"{_PARENT} `title`", "only for markets that come with their event"),
            ColumnSource("series_id", f"{_PARENT} `series_ticker`", "only for markets that come with their event"),
            ColumnSource("title", "`title`", "in a mutually exclusive event, the event's question (the leg's "
                         "candidate is in `outcome_label`)"),
            ColumnSource(
                "outcome_label", "`yes_sub_title`",
                f"the Yes side's short title: the candidate, team or bracket of the leg ({_KALSHI_MARKET_DOC}). "
                "The outcomes stay Yes and No, the names trades carry",
            ),
            ColumnSource("subtitle", "`subtitle`", "deprecated by Kalshi, read while sent; an empty string is null"),
            ColumnSource("strike_type", "`strike_type`", "as sent: `greater`, `greater_or_equal`, `less`, "
                         "`less_or_equal`, `between`, `functional`, `custom`, `structured`"),
            ColumnSource("lower_bound", "`floor_strike`", "the lowest expiration value that settles Yes"),
            ColumnSource("upper_bound", "`cap_strike`", "the highest expiration value that settles Yes"),
            ColumnSource(
                "mutually_exclusive", f"{_PARENT} `mutually_exclusive`",
                "only for markets that come with their event (nested in `/events`, or beside it in `/events/{ticker}`)",
            ),
            ColumnSource("category", f"{_PARENT} `category`", "only for markets that come with their event"),
            ColumnSource("status", "`status`, `result`", "see the status table below"),
            ColumnSource("market_type", "`market_type`", "`binary` or `scalar`; never categorical"),
            ColumnSource(
                "outcomes",
                "none: every Kalshi market trades Yes and No contracts",
                "`[{id: yes, name: Yes}, {id: no, name: No}]`",
            ),
            ColumnSource(
                "current_prices",
                f"{_dollars('last_price')}; {_dollars('yes_bid')}, "
                f"{_dollars('yes_ask')}, {_dollars('no_bid')}, {_dollars('no_ask')}",
                "dollars; yes price is the last trade's, no price 1 - it (4 decimals); when `result` is "
                "yes or no, the winner's price is 1 and the loser's 0; when it is `scalar`, the yes price is "
                f"{_dollars('settlement_value')}, what a Yes (long) contract paid (none if Kalshi sent no value). "
                "A `last_price` of 0 is Kalshi's "
                "\"never traded\" (no contract trades at 0 or 1 dollar): such an unsettled market has no "
                f"entries, no price rather than a 0% probability. {_EMPTY_SIDE} {_KALSHI_DEAD_BOOK}",
            ),
            ColumnSource("volume_24h_contracts", _count("volume_24h"), "contracts (each pays $1); Kalshi reports no "
                         "volume in dollars, so `volume_24h` stays null"),
            ColumnSource("volume_total_contracts", _count("volume"), "contracts; `volume_total` stays null"),
            ColumnSource(
                "liquidity", _dollars("liquidity"),
                "dollars; 0 is null: Kalshi deprecated the field, which \"will always return 0.0000\" "
                f"({_KALSHI_MARKET_DOC}), so 0 is a placeholder, not an empty book",
            ),
            ColumnSource("open_interest_contracts", _count("open_interest"), "contracts; `open_interest` stays null"),
            ColumnSource("created_at", "`created_time`", "Go's zero time `0001-01-01T00:00:00Z` means unknown: null"),
            ColumnSource("trading_start_at", "`open_time`"),
            ColumnSource("trading_end_at", "`close_time`", "as Kalshi has it when fetched: it moves when the "
                         "market is extended or closes early (`can_close_early`); past it a market is `closed`"),
            ColumnSource("resolution_date", "`expected_expiration_time`, else `expiration_time`"),
            ColumnSource(
                "resolved_at", "`settlement_ts`",
                f"when the market settled; only sent for settled markets ({_KALSHI_MARKET_DOC})",
            ),
            ColumnSource("resolution_criteria", "`rules_primary`", "an empty string is null"),
            ColumnSource(
                "last_trade_price", _dollars("last_price"),
                "the Yes price of the last trade, kept once the market settles; a `last_price` of 0 (never traded) "
                "is null",
            ),
            ColumnSource(
                "settlement_value", _dollars("settlement_value"),
                f"what a Yes (long) contract paid, in dollars; only after determination ({_KALSHI_MARKET_DOC})",
            ),
            ColumnSource("expiration_value", "`expiration_value`",
                         "the underlying's value the market settled on, as text; an empty string is null"),
            ColumnSource(
                "metadata",
                f"{_dollars('yes_bid')}, {_dollars('yes_ask')}",
                "best_bid and best_ask (the Yes book; an empty side, 0 or 1, is null, and both are null once the "
                "result is known, as in `current_prices`); the other fields stay null",
            ),
            SYNCED,
        ),
    ),
    EntityMapping(
        Platform.KALSHI,
        "trades",
        "`GET /markets/trades` (`{trades, cursor}`)",
        "trades",
        (
            ColumnSource("trade_id", "`trade_id`"),
            ColumnSource("market_id", "`ticker`"),
            ColumnSource("side", "none", "`buy`: a row is the taker's order, which bought the taker's side"),
            ColumnSource(
                "price",
                f"{_dollars('yes_price')} or {_dollars('no_price')}",
                "the price of the side the taker bought, in dollars",
            ),
            ColumnSource("size", _count("count"), "contracts"),
            ColumnSource("timestamp", "`created_time`"),
            ColumnSource(
                "outcome", "`taker_outcome_side`, else `taker_book_side`, else `taker_side`",
                "`Yes` or `No`, as the market's outcome names: the taker's side is `taker_outcome_side`; "
                "`taker_book_side` `bid` is Yes and `ask` No; `taker_side` is deprecated "
                f"({_KALSHI_TRADE_DOC}). A trade without any of the three is a reject",
            ),
            ColumnSource("taker", "none", "true: Kalshi reports each trade from its taker's side"),
            ColumnSource(
                "metadata", "the taker's side, yes and no prices, `taker_outcome_side`, `taker_book_side`, "
                "`is_block_trade`",
                "JSON text `{taker_side, yes_price, no_price, taker_outcome_side, taker_book_side, is_block_trade}` "
                "(dollars; `taker_side` the side read as above; fields Kalshi did not send are null)",
            ),
        ),
    ),
    EntityMapping(
        Platform.KALSHI,
        "price_history",
        "`GET /series/{series}/markets/{ticker}/candlesticks` (`{ticker, candlesticks}`), the batch "
        "`GET /markets/candlesticks` (`{markets: [{market_ticker, candlesticks}]}`) and "
        "`GET /series/{series}/events/{ticker}/candlesticks` (`{market_tickers, market_candlesticks, "
        "adjusted_end_ts}`)",
        "price_history",
        (
            ColumnSource(
                "timestamp",
                "`end_period_ts` - context `period_interval` * 60",
                "Kalshi labels a candle by its period's end, the warehouse by its start",
            ),
            ColumnSource(
                "price",
                "`price.{open,high,low,close}_dollars`, else `price.{open,high,low,close}` (cents) / 100; "
                "`price.previous_dollars` (else `price.previous`)",
                "dollars, the OHLC of the period's trades, which Kalshi leaves null when \"there was no trade during "
                "the period\" (its PriceDistribution). Such a period closes at `price.previous`, the last trade's "
                "price before it, and keeps open, high and low null: its `volume` of 0 flags it, and the market's "
                "series has no holes, as Polymarket's has none. A `previous` of 0 or none (never traded) leaves the "
                "close null",
            ),
            ColumnSource(
                "market_id",
                "`ticker` of the response, else context `market_id`; `markets[].market_ticker` (batch); "
                "`market_tickers[i]` for `market_candlesticks[i]` (event)",
                "each market's candles under its own ticker; with context `market_tickers` (the request's list), "
                "candles of a market not asked for are rejects",
            ),
            ColumnSource("outcome_id", "none", "`yes`: Kalshi candles price the Yes side"),
            ColumnSource("volume", _count("volume"), "contracts"),
            ColumnSource("open_interest", _count("open_interest"), "contracts"),
            ColumnSource("bid_ask", "`yes_bid` and `yes_ask` OHLC (`*_dollars`, else cents / 100)", "dollars"),
        ),
    ),
)

DIRECT_MAPPINGS: tuple[EntityMapping, ...] = (*POLYMARKET, *KALSHI)
# Rules that hold for every mapping, rendered above the tables.
NOTES: tuple[str, ...] = (
    "`platform`, `date`, `_source` (`direct`) and `_fetched_at` come from the call; a column a table does not "
    "list stays null, because the platform does not send it.",
    'An empty string is stored as null in optional text columns: both platforms write "no value" that way.',
    "Kalshi sends prices twice, as dollar strings (`*_dollars`) and deprecated integer cents, and counts twice, "
    "as fixed-point strings (`*_fp`) and deprecated integers: the strings are read first, the old fields only "
    "when a string is absent, and a string that is no number rejects its record. Cents become dollars rounded "
    "to 6 decimals (Kalshi's finest), so that 35 cents is 0.35, not 0.35000000000000003.",
    "A record whose fields have the wrong JSON type, lack a required value, or hold a value no rule maps is "
    "a reject, with the reason; a body of the wrong shape, or a missing context value, is an error.",
)
