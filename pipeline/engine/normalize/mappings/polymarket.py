"""How Polymarket's own responses (Gamma, the CLOB, the Data API) map onto the warehouse tables: its status rules,
market types and categories, read by pipeline.engine.normalize.polymarket_markets, and its column tables."""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.engine.normalize.mappings.columns import EMPTY_SIDE, SYNCED, ColumnSource, EntityMapping
from pipeline.engine.schema import MarketStatus, MarketType, Platform

OPEN, PAUSED, RESOLVED, CANCELLED = (
    MarketStatus.OPEN,
    MarketStatus.PAUSED,
    MarketStatus.RESOLVED,
    MarketStatus.CANCELLED,
)


@dataclass(frozen=True)
class StatusRule:
    """A Polymarket status rule: the flags (POLYMARKET_FLAGS) it tests, each with the value it needs."""

    when: tuple[tuple[str, bool], ...]
    status: MarketStatus
    why: str



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
                f"{EMPTY_SIDE}",
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
