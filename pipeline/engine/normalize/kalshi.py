"""Kalshi's own responses (public API v2) -> the warehouse tables, with `_source` = `direct`.

Series, events, markets, trades and candlesticks; prices in dollars and counts in contracts, read by
`pipeline.engine.normalize.kalshi_wire`; the field, status and market-type tables in
`pipeline.engine.normalize.mappings`. What Kalshi's values mean and which columns stay null, in docs/design.md,
"Kalshi's records".
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

import polars as pl

from pipeline.engine.normalize.kalshi_wire import (
    CANDLE_FIELDS,
    EVENT_FIELDS,
    MARKET_FIELDS,
    OHLC,
    SERIES_FIELDS,
    TRADE_FIELDS,
    Decimals,
    kalshi_time,
    records_of,
    unknown_value,
)
from pipeline.engine.normalize.mappings import KALSHI_MARKET_TYPES, KALSHI_STATUS
from pipeline.engine.normalize.native_frames import (
    NESTED_COUNT,
    NESTED_PROBLEM,
    Native,
    direct_lineage,
    finish,
    read,
    shape_error,
    with_nested_count,
)
from pipeline.engine.normalize.rows import book_quote
from pipeline.engine.normalized import Normalized
from pipeline.engine.schema import PRICE_HISTORY_INTERVALS, TABLES, MarketStatus, Platform
from pipeline.engine.wire_times import parse_unix

PLATFORM = Platform.KALSHI.value
_RESULTS = ("yes", "no", "scalar")
_SETTLED = (MarketStatus.RESOLVED.value, MarketStatus.CANCELLED.value)
_OUTCOMES = {"yes": "Yes", "no": "No"}
_BOOK_SIDES = {"bid": "yes", "ask": "no"}  # a taker hitting the bid bought Yes, the ask No


# -- series and events -------------------------------------------------------------------------------------


def normalize_series(
    body: Any, *, day: dt.date, fetched_at: dt.datetime, context: Mapping[str, str] | None = None
) -> dict[str, Normalized]:
    """`/series` (`{series: [...]}`) or `/series/{ticker}` (`{series: {...}}`) -> `series`."""
    native = read(SERIES_FIELDS, records_of(body, "series", "series", "series"))
    columns = {
        "id": pl.col("ticker"),
        "platform_id": pl.col("ticker"),
        "title": pl.col("title"),
        "category": pl.col("category"),
        "tags": pl.col("tags"),
        "fee_type": pl.col("fee_type"),
        "fee_multiplier": pl.col("fee_multiplier"),
    }
    return {"series": finish(TABLES["series"], native, columns, [], direct_lineage(PLATFORM, day, fetched_at))}


def normalize_events(
    body: Any, *, day: dt.date, fetched_at: dt.datetime, context: Mapping[str, str] | None = None
) -> dict[str, Normalized]:
    """`/events` (`{events}`, markets nested with `with_nested_markets`) or `/events/{ticker}` (`{event,
    markets}`) -> `events`, and their markets -> `markets`, which take their event's title, series and
    category. Markets are normalized whatever becomes of their event."""
    events = records_of(body, "events", "events", "event")
    beside = body.get("markets") if "event" in body else None  # `/events/{ticker}` lists them beside the event
    if beside is not None and not isinstance(beside, list):
        raise shape_error("kalshi events", 'a "markets" array beside the "event"', beside)
    native = with_nested_count(read(EVENT_FIELDS, events), "markets")
    columns = {
        "id": pl.col("event_ticker"),
        "platform_id": pl.col("event_ticker"),
        "title": pl.col("title"),
        "series_id": pl.col("series_ticker"),
        "market_count": pl.col(NESTED_COUNT) if beside is None else pl.lit(float(len(beside))),
        "mutually_exclusive": pl.col("mutually_exclusive"),
    }
    lineage = direct_lineage(PLATFORM, day, fetched_at)
    parents = native.frame.select(
        "event_ticker",
        _event_name=pl.col("title"),
        _series_id=pl.col("series_ticker"),
        _category=pl.col("category"),
        _mutually_exclusive=pl.col("mutually_exclusive"),
    )
    return {
        "events": finish(TABLES["events"], native, columns, [pl.col(NESTED_PROBLEM)], lineage),
        "markets": _markets([*_nested_markets(events), *(beside or ())], lineage, parents),
    }


def _nested_markets(events: list[Any]) -> list[Any]:
    nested: list[Any] = []
    for event in events:
        markets = event.get("markets") if isinstance(event, dict) else None
        if isinstance(markets, list):
            nested += markets
    return nested


# -- markets -----------------------------------------------------------------------------------------------


def normalize_markets(
    body: Any, *, day: dt.date, fetched_at: dt.datetime, context: Mapping[str, str] | None = None
) -> dict[str, Normalized]:
    """`/markets` (`{markets, cursor}`) or `/markets/{ticker}` (`{market}`) -> `markets`."""
    records = records_of(body, "markets", "markets", "market")
    return {"markets": _markets(records, direct_lineage(PLATFORM, day, fetched_at))}


_NO_PARENTS = pl.DataFrame(
    schema={**dict.fromkeys(("event_ticker", "_event_name", "_series_id", "_category"), pl.String),
            "_mutually_exclusive": pl.Boolean}
)


def _markets(records: list[Any], lineage: dict[str, Any], parents: pl.DataFrame = _NO_PARENTS) -> Normalized:
    native = _with_parents(read(MARKET_FIELDS, records), parents)
    decimals = Decimals()
    status, status_problem = _status()
    market_type = pl.col("market_type").replace_strict(_values(KALSHI_MARKET_TYPES), default=None)
    quote = _live_quote(status)
    yes_bid, yes_ask = quote(decimals.dollars("yes_bid")), quote(decimals.dollars("yes_ask"))
    last_trade = _traded(decimals.dollars("last_price", required=True))
    settlement = decimals.dollars("settlement_value")
    yes_price = _settled_yes_price(last_trade, settlement)
    columns = {
        "id": pl.col("ticker"),
        "platform_id": pl.col("ticker"),
        "event_id": pl.col("event_ticker"),
        "event_name": pl.col("_event_name"),
        "series_id": pl.col("_series_id"),
        "title": pl.col("title"),
        "outcome_label": pl.col("yes_sub_title"),
        "subtitle": pl.col("subtitle"),
        "strike_type": pl.col("strike_type"),
        "lower_bound": pl.col("floor_strike"),
        "upper_bound": pl.col("cap_strike"),
        "mutually_exclusive": pl.col("_mutually_exclusive"),
        "category": pl.col("_category"),
        "status": status,
        "market_type": market_type,
        "outcomes": pl.concat_list([pl.struct(id=pl.lit(key), name=pl.lit(name)) for key, name in _OUTCOMES.items()]),
        "current_prices": pl.concat_list(  # no entries for a market without a price (never traded)
            pl.struct(key=pl.lit("yes"), price=yes_price, bid=yes_bid, ask=yes_ask),
            pl.struct(
                key=pl.lit("no"),
                price=(1 - yes_price).round(4),
                bid=quote(decimals.dollars("no_bid")),
                ask=quote(decimals.dollars("no_ask")),
            ),
        ).list.filter(pl.element().struct.field("price").is_not_null()),
        "volume_24h_contracts": decimals.count("volume_24h"),
        "volume_total_contracts": decimals.count("volume"),
        "liquidity": _reported(decimals.dollars("liquidity")),
        "open_interest_contracts": decimals.count("open_interest"),
        "created_at": kalshi_time("created_time"),
        "trading_start_at": kalshi_time("open_time"),
        "trading_end_at": kalshi_time("close_time"),
        "resolution_date": pl.coalesce(kalshi_time("expected_expiration_time"), kalshi_time("expiration_time")),
        "resolved_at": kalshi_time("settlement_ts"),
        "resolution_criteria": pl.col("rules_primary"),
        "last_trade_price": last_trade,
        "settlement_value": settlement,
        "expiration_value": pl.col("expiration_value"),
        "metadata": _metadata(yes_bid, yes_ask),
    }
    problems = [
        status_problem,
        unknown_value(pl.col("market_type"), market_type, "market_type", KALSHI_MARKET_TYPES),
        *decimals.problems,
    ]
    return finish(TABLES["markets"], native, columns, problems, lineage)


def _with_parents(native: Native, parents: pl.DataFrame) -> Native:
    """The markets with their event's title, series and category, when the response gave the event."""
    unique = parents.unique("event_ticker", keep="first", maintain_order=True)
    return replace(native, frame=native.frame.join(unique, on="event_ticker", how="left", maintain_order="left"))


def _values(mapping: Mapping[str, Any]) -> dict[str, str]:
    return {key: str(value) for key, value in mapping.items()}


def _status() -> tuple[pl.Expr, pl.Expr]:
    """The status from KALSHI_STATUS, except that a resolved status without a result is a voided market."""
    native = pl.col("status")
    mapped = native.replace_strict(_values(KALSHI_STATUS), default=None)
    voided = (mapped == MarketStatus.RESOLVED.value) & ~pl.col("result").is_in(_RESULTS).fill_null(False)
    status = pl.when(voided).then(pl.lit(MarketStatus.CANCELLED.value)).otherwise(mapped)
    return status, unknown_value(native, mapped, "status", KALSHI_STATUS)


def _live_quote(status: pl.Expr) -> Callable[[pl.Expr], pl.Expr]:
    """A best bid or ask as a quote (`book_quote`), or null once the market's result is known (its status resolved
    or cancelled, or `result` set): trading is over, and what Kalshi still sends is the book as it stood at the
    close, not a price anyone can trade at; the market's price is then its payout."""
    known = status.is_in(_SETTLED) | pl.col("result").is_in(_RESULTS)
    return lambda price: pl.when(~known.fill_null(False)).then(book_quote(price))


def _traded(last_price: pl.Expr) -> pl.Expr:
    """The last trade's price, or null for a market that never traded: Kalshi writes that as `last_price` 0
    (no contract trades at 0 or at 1 dollar)."""
    return pl.when((last_price > 0) & (last_price < 1)).then(last_price)


def _settled_yes_price(last_price: pl.Expr, settlement_value: pl.Expr) -> pl.Expr:
    """The Yes price: what a Yes contract paid once settled (1 or 0 when `result` says yes or no, the
    settlement value when it says scalar, none if a scalar's value is missing), else the last trade's."""
    result = pl.col("result")
    paid = pl.when(result == "yes").then(1.0).when(result == "no").then(0.0)
    return paid.when(result == "scalar").then(settlement_value).otherwise(last_price)


def _reported(liquidity: pl.Expr) -> pl.Expr:
    """Kalshi's liquidity, or null for the placeholder: Kalshi deprecated the field, which now always reads
    0 ("0.0000"), whatever the book holds."""
    return pl.when(liquidity != 0).then(liquidity)


def _metadata(best_bid: pl.Expr, best_ask: pl.Expr) -> pl.Expr:
    """Kalshi fills the Yes book's best bid and ask; the Polymarket-shaped fields stay null."""
    schema = TABLES["markets"].polars_schema["metadata"]
    assert isinstance(schema, pl.Struct)
    known = {"best_bid": best_bid, "best_ask": best_ask}
    return pl.struct([known.get(f.name, pl.lit(None, f.dtype)).alias(f.name) for f in schema.fields])


# -- trades and candlesticks -------------------------------------------------------------------------------


def normalize_trades(
    body: Any, *, day: dt.date, fetched_at: dt.datetime, context: Mapping[str, str] | None = None
) -> dict[str, Normalized]:
    """`/markets/trades` (`{trades, cursor}`) -> `trades`: each is the taker's buy of its side (`_taker_side`) at
    that side's price, in polars expressions over the whole response (a hot path)."""
    native = read(TRADE_FIELDS, records_of(body, "trades", "trades"))
    decimals = Decimals()
    side, side_problem = _taker_side()
    yes = decimals.dollars("yes_price", required=True)
    no = pl.coalesce(decimals.dollars("no_price"), (1 - yes).round(4))
    outcome = side.replace_strict(_OUTCOMES, default=None)
    metadata = pl.struct(
        taker_side=side,
        yes_price=yes,
        no_price=no,
        taker_outcome_side=pl.col("taker_outcome_side"),
        taker_book_side=pl.col("taker_book_side"),
        is_block_trade=pl.col("is_block_trade"),
    )
    columns = {
        "trade_id": pl.col("trade_id"),
        "market_id": pl.col("ticker"),
        "side": pl.lit("buy"),
        "price": pl.when(side == "yes").then(yes).when(side == "no").then(no),
        "size": decimals.count("count", required=True),
        "timestamp": kalshi_time("created_time"),
        "outcome": outcome,
        "taker": pl.lit(True),
        "metadata": metadata.struct.json_encode(),
    }
    problems = [side_problem, *decimals.problems]
    return {"trades": finish(TABLES["trades"], native, columns, problems, direct_lineage(PLATFORM, day, fetched_at))}


def _taker_side() -> tuple[pl.Expr, pl.Expr]:
    """The side the taker bought, `yes` or `no`: `taker_outcome_side`, else `taker_book_side` (bid is Yes, ask
    is No), else the deprecated `taker_side`; and per trade why none can be read."""
    outcome_side, book_side, old_side = pl.col("taker_outcome_side"), pl.col("taker_book_side"), pl.col("taker_side")
    from_book = book_side.replace_strict(_BOOK_SIDES, default=None)
    side = pl.coalesce(outcome_side, from_book, old_side)
    missing = "missing required field 'taker_outcome_side' (or 'taker_book_side', 'taker_side')"
    problem = pl.coalesce(
        unknown_value(
            outcome_side, outcome_side.replace_strict(_OUTCOMES, default=None), "taker_outcome_side", _OUTCOMES
        ),
        unknown_value(book_side, from_book, "taker_book_side", _BOOK_SIDES),
        unknown_value(old_side, old_side.replace_strict(_OUTCOMES, default=None), "taker_side", _OUTCOMES),
        pl.when(side.is_null()).then(pl.lit(missing)),
    )
    return side, problem


def normalize_price_history(
    body: Any, *, day: dt.date, fetched_at: dt.datetime, context: Mapping[str, str] | None = None
) -> dict[str, Normalized]:
    """Candlesticks -> `price_history`, labelled by period start, from any of Kalshi's three shapes: one
    market's (`{ticker, candlesticks}`), the batch endpoint's (`{markets: [{market_ticker, candlesticks}]}`)
    and an event's (`{market_tickers, market_candlesticks, adjusted_end_ts}`, parallel arrays). Each market's
    candles land under its own ticker; with `context["market_tickers"]` (the request's comma list), candles
    of a market that was not asked for are rejects.

    Kalshi labels a candle by `end_period_ts`; the warehouse labels it by its period's start, which is the
    end minus `context["period_interval"]` minutes (the request's interval: the response does not say it).
    A period without trades (its `price` OHLC null, its `volume` 0) closes at `price.previous`, the last trade's
    price before it; its open, high and low stay null.
    """
    interval = _period_interval(context)
    asked = set(filter(None, (context or {}).get("market_tickers", "").split(",")))
    lineage = direct_lineage(PLATFORM, day, fetched_at)
    parts = [
        _market_candles(records, market_id, interval, lineage, asked)
        for market_id, records in _candle_groups(body, context) or [(None, [])]  # no market: the empty table
    ]
    rows = pl.concat([part.rows for part in parts])
    return {"price_history": Normalized(rows, pl.concat([part.rejects for part in parts]))}


def _market_candles(
    records: list[Any], market_id: str | None, interval: int, lineage: dict[str, Any], asked: set[str]
) -> Normalized:
    """One market's candles as rows."""
    native = read(CANDLE_FIELDS, records)
    decimals = Decimals()
    columns = {
        "timestamp": parse_unix(pl.col("end_period_ts") - interval * 60),
        "price": _traded_candle(decimals),
        "market_id": pl.lit(market_id, pl.String),
        "volume": decimals.count("volume"),
        "open_interest": decimals.count("open_interest"),
        "bid_ask": pl.struct(bid=_candle(decimals, "yes_bid"), ask=_candle(decimals, "yes_ask")),
        "outcome_id": pl.lit("yes"),
    }
    problems = list(decimals.problems)
    if market_id is None:
        problems.append(pl.lit("the response names no market: no 'ticker', and no market_id in the context"))
    elif asked and market_id not in asked:
        problems.append(pl.lit(f"candles of market {market_id!r}, which was not asked for"))
    return finish(TABLES["price_history"], native, columns, problems, lineage)


def _traded_candle(decimals: Decimals) -> pl.Expr:
    """The traded prices' OHLC. A period without trades (Kalshi's `price` OHLC null, `volume` 0) closes at the
    previous period's close, Kalshi's `price.previous` (a `previous` of 0 means never traded: no close), so that a
    market's series has no holes; its open, high and low stay null, and its `volume` of 0 says it had no trade."""
    ohlc = {key: decimals.dollars(key, within="price") for key in OHLC}
    carried = _traded(decimals.dollars("previous", within="price"))
    return pl.struct(**{**ohlc, "close": pl.coalesce(ohlc["close"], carried)})


def _candle(decimals: Decimals, within: str) -> pl.Expr:
    return pl.struct(**{key: decimals.dollars(key, within=within) for key in OHLC})


def _candle_groups(body: Any, context: Mapping[str, str] | None) -> list[tuple[str | None, list[Any]]]:
    """Each market of the response with its candles."""
    if isinstance(body, dict) and "markets" in body:
        return [(_text(entry, "market_ticker"), _array(entry, "candlesticks")) for entry in _array(body, "markets")]
    if isinstance(body, dict) and "market_candlesticks" in body:
        tickers, candles = _array(body, "market_tickers"), _array(body, "market_candlesticks")
        if len(tickers) != len(candles) or not all(isinstance(t, str) for t in tickers):
            expected = f"as many market_tickers (strings) as market_candlesticks, not {len(tickers)} and {len(candles)}"
            raise shape_error("kalshi price_history", expected, body)
        return [(ticker, _list(c, "market_candlesticks of arrays")) for ticker, c in zip(tickers, candles, strict=True)]
    records = records_of(body, "price_history", "candlesticks")
    ticker = body.get("ticker")
    if ticker is not None and not isinstance(ticker, str):
        raise shape_error("kalshi price_history", 'a "ticker" string', ticker)
    return [(ticker or (context or {}).get("market_id"), records)]


def _array(body: Any, key: str) -> list[Any]:
    return _list(body.get(key) if isinstance(body, dict) else body, f'an object with "{key}" (an array)')


def _list(value: Any, expected: str) -> list[Any]:
    if not isinstance(value, list):
        raise shape_error("kalshi price_history", expected, value)
    return value


def _text(body: Any, key: str) -> str:
    value = body.get(key) if isinstance(body, dict) else None
    if not isinstance(value, str):
        raise shape_error("kalshi price_history", f'an object with "{key}" (a string)', body)
    return value


def _period_interval(context: Mapping[str, str] | None) -> int:
    text_value = (context or {}).get("period_interval", "")
    allowed = ", ".join(map(str, PRICE_HISTORY_INTERVALS))
    if not text_value.isdigit() or int(text_value) not in PRICE_HISTORY_INTERVALS:
        raise ValueError(
            f"kalshi price_history: context needs period_interval, the candles' minutes ({allowed}), "
            f"got {text_value or 'none'!r}"
        )
    return int(text_value)
