"""How Kalshi's own responses (API v2) map onto the warehouse tables: its statuses and market types, read by
pipeline.engine.normalize.kalshi, and its column tables."""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.engine.normalize.mappings.columns import EMPTY_SIDE, SYNCED, ColumnSource, EntityMapping
from pipeline.engine.schema import MarketStatus, MarketType, Platform

OPEN, PAUSED, RESOLVED = MarketStatus.OPEN, MarketStatus.PAUSED, MarketStatus.RESOLVED


@dataclass(frozen=True)
class KalshiStatus:
    native: str
    status: MarketStatus
    why: str



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
                f"entries, no price rather than a 0% probability. {EMPTY_SIDE} {_KALSHI_DEAD_BOOK}",
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
