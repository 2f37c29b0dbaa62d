"""Kalshi's own responses (public API v2) -> the warehouse tables, with `_source` = `direct`.

Endpoints read: `/series` (and `/series/{ticker}`), `/events` (with nested markets or not, and
`/events/{ticker}`), `/markets` (and `/markets/{ticker}`), `/markets/trades`, and candlesticks from
`/series/{series}/markets/{ticker}/candlesticks`, the batch `/markets/candlesticks` and
`/series/{series}/events/{ticker}/candlesticks`.

Prices: since 2026 Kalshi sends fixed-point dollar strings (`yes_bid_dollars: "0.4200"`) and fixed-point
counts (`volume_fp`, `count_fp`) beside the deprecated integer cents and integer counts. The new fields are
read first, the old ones only when a new one is absent; a new field that is no number rejects its record
rather than fall back silently. Prices are stored in dollars (0..1; cents rounded to 6 decimals, so that 35
cents is exactly 0.35), counts in contracts.

What the values mean, beyond their types: a `last_price` of 0 is "never traded" (no price); a book side of 0
or 1 is no quote, and a market whose result is known has no bid or ask (what Kalshi still sends is the dead book
of the close); a candle period without trades closes at `price.previous`; `liquidity_dollars` is deprecated and
always "0.0000" (stored null); a settled scalar's Yes price is its `settlement_value_dollars`; a leg's candidate
is its `yes_sub_title` (`outcome_label`), its title being the event's question; the taker's side is
`taker_outcome_side` (else `taker_book_side`, else the deprecated `taker_side`).

Which native field feeds which column, and the status and market-type tables, are in
`pipeline.engine.normalize.mappings` (rendered in docs/schema.md); the status and market-type tables are read from
there. Columns those tables do not name stay null, because Kalshi does not send them:
- series: slug, description, image_url, event_count, market_count, total_volume.
- events: slug, description, image_url, resolution_source_url, event_start_at (Kalshi documents no start
  time), event_end_at, total_volume.
- markets: event_slug, slugs, description, subcategory, tags, volume_7d, unique_traders, fee_rate and the
  other fee columns (Kalshi's fees are the series': `series.fee_type`, `fee_multiplier`), URLs,
  resolution_source, price changes, last_trades, neg_risk_market_id, event_start_at, and the currency columns
  volume_24h, volume_total and open_interest (Kalshi counts contracts: the *_contracts columns);
  event_name, series_id, category and mutually_exclusive are filled only for markets that come with their
  event (`/events`); resolved_at, settlement_value and expiration_value only once settled.
- trades: transaction_hash and user (Kalshi trades are anonymous).
- price_history: every column; Kalshi candles price the Yes side, so every outcome_id is `yes`.

Multivariate (MVE: `KXMVE...` tickers, `mve_collection_ticker`) markets are normalised like any other: the
caller keeps them out with `mve_filter=exclude`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

import polars as pl

from pipeline.engine.normalize.frames import (
    NESTED_COUNT,
    NESTED_PROBLEM,
    Native,
    Normalised,
    book_quote,
    decimal,
    direct_lineage,
    exact_price,
    finish,
    flag,
    iso_text,
    number,
    quoted,
    read,
    shape_error,
    struct,
    text,
    texts,
    unix_number,
    with_nested_count,
)
from pipeline.engine.normalize.mappings import KALSHI_MARKET_TYPES, KALSHI_STATUS
from pipeline.engine.schema import PRICE_HISTORY_INTERVALS, TABLES, Field, MarketStatus, Platform
from pipeline.engine.wire_times import parse_iso, parse_unix

PLATFORM = Platform.KALSHI.value
_GO_ZERO_TIME = "0001-01-01T00:00:00Z"  # Go's zero time.Time: how Kalshi writes an unknown time
_OHLC = ("open", "high", "low", "close")
_RESULTS = ("yes", "no", "scalar")
_SETTLED = (MarketStatus.RESOLVED.value, MarketStatus.CANCELLED.value)
_OUTCOMES = {"yes": "Yes", "no": "No"}
_BOOK_SIDES = {"bid": "yes", "ask": "no"}  # a taker hitting the bid bought Yes, the ask No


def _dollars_fields(*names: str) -> tuple[Field, ...]:
    """A price as Kalshi sends it twice: `{name}_dollars` (a decimal string) and `{name}` (integer cents)."""
    return tuple(field for name in names for field in (text(f"{name}_dollars"), number(name)))


def _count_fields(*names: str) -> tuple[Field, ...]:
    """A count as Kalshi sends it twice: `{name}_fp` (a fixed-point string) and `{name}` (an integer)."""
    return tuple(field for name in names for field in (text(f"{name}_fp"), number(name)))


SERIES_FIELDS = (
    text("ticker", required=True),
    text("title", required=True),
    text("category"),
    texts("tags"),
    text("fee_type"),
    number("fee_multiplier"),
)
EVENT_FIELDS = (
    text("event_ticker", required=True),
    text("title", required=True),
    text("series_ticker"),
    text("category"),
    flag("mutually_exclusive"),
)
MARKET_FIELDS = (
    text("ticker", required=True),
    text("title", required=True),
    text("status", required=True),
    text("market_type", required=True),
    text("event_ticker"),
    text("result"),
    text("subtitle"),
    text("yes_sub_title"),
    text("strike_type"),
    number("floor_strike"),
    number("cap_strike"),
    *_dollars_fields("last_price", "yes_bid", "yes_ask", "no_bid", "no_ask", "liquidity", "settlement_value"),
    *_count_fields("volume", "volume_24h", "open_interest"),
    iso_text("created_time"),
    iso_text("open_time"),
    iso_text("close_time"),
    iso_text("expected_expiration_time"),
    iso_text("expiration_time"),
    iso_text("settlement_ts"),
    text("expiration_value"),
    text("rules_primary"),
)
TRADE_FIELDS = (
    text("trade_id", required=True),
    text("ticker", required=True),
    iso_text("created_time", required=True),
    text("taker_outcome_side"),
    text("taker_book_side"),
    text("taker_side"),
    flag("is_block_trade"),
    *_count_fields("count"),
    *_dollars_fields("yes_price", "no_price"),
)
CANDLE_FIELDS = (
    unix_number("end_period_ts", required=True),
    struct("price", *_dollars_fields(*_OHLC, "previous"), required=True),
    struct("yes_bid", *_dollars_fields(*_OHLC)),
    struct("yes_ask", *_dollars_fields(*_OHLC)),
    *_count_fields("volume", "open_interest"),
)


class _Decimals:
    """The expressions of Kalshi's doubled fields (new decimal string first, old number second), keeping the
    problems they can have (a new field that is no number; both missing where a value is needed)."""

    def __init__(self) -> None:
        self.problems: list[pl.Expr] = []

    def dollars(self, name: str, *, within: str | None = None, required: bool = False) -> pl.Expr:
        """A price in dollars: `{name}_dollars`, else `{name}` (integer cents) in dollars."""
        return self._either(f"{name}_dollars", name, _cents_to_dollars(_field(name, within)), within, required)

    def count(self, name: str, *, required: bool = False) -> pl.Expr:
        """A number of contracts: `{name}_fp`, else `{name}`."""
        return self._either(f"{name}_fp", name, pl.col(name), None, required)

    def _either(self, new: str, old: str, fallback: pl.Expr, within: str | None, required: bool) -> pl.Expr:
        path = f"{within}." if within else ""
        value, problem = decimal(_field(new, within), f"{path}{new}")
        value = pl.coalesce(value, fallback)
        self.problems.append(problem)
        if required:
            missing = f"missing required field '{path}{new}' (or '{path}{old}')"
            self.problems.append(pl.when(value.is_null()).then(pl.lit(missing)))
        return value


def _cents_to_dollars(cents: pl.Expr) -> pl.Expr:
    """Cents as dollars, exactly: polars computes `cents / 100` as `cents * 0.01`, which makes 35 cents
    0.35000000000000003; `exact_price` rounds to Kalshi's finest precision (6 decimals), the double nearest 0.35."""
    return exact_price(cents / 100)


def _field(name: str, within: str | None) -> pl.Expr:
    return pl.col(name) if within is None else pl.col(within).struct.field(name)


def _time(name: str) -> pl.Expr:
    """A Kalshi time; Go's zero time (`0001-01-01T00:00:00Z`) means unknown and is stored as null."""
    value = pl.col(name)
    return parse_iso(pl.when(value != _GO_ZERO_TIME).then(value))


def _records(body: Any, entity: str, key: str, single: str | None = None) -> list[Any]:
    """The records of a Kalshi response: `body[key]` when it is an array, `[body[single]]` when an object
    (`/markets/{ticker}` sends `{"market": {...}}`, `/series/{ticker}` `{"series": {...}}`)."""
    if isinstance(body, dict):
        if isinstance(body.get(key), list):
            return body[key]
        if single is not None and isinstance(body.get(single), dict):
            return [body[single]]
    expected = f'an object with "{key}" (an array)' + (f' or "{single}" (an object)' if single else "")
    raise shape_error(f"kalshi {entity}", expected, body)


def _unknown(native: pl.Expr, mapped: pl.Expr, wire: str, known: Mapping[str, Any]) -> pl.Expr:
    listed = ", ".join(known)
    return pl.when(native.is_not_null() & mapped.is_null()).then(
        pl.concat_str([pl.lit(f"field '{wire}': not one of {listed}: "), quoted(native)])
    )


# -- series and events -------------------------------------------------------------------------------------


def normalise_series(
    body: Any, *, day: dt.date, fetched_at: dt.datetime, context: Mapping[str, str] | None = None
) -> dict[str, Normalised]:
    """`/series` (`{series: [...]}`) or `/series/{ticker}` (`{series: {...}}`) -> `series`."""
    native = read(SERIES_FIELDS, _records(body, "series", "series", "series"))
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


def normalise_events(
    body: Any, *, day: dt.date, fetched_at: dt.datetime, context: Mapping[str, str] | None = None
) -> dict[str, Normalised]:
    """`/events` (`{events}`, markets nested with `with_nested_markets`) or `/events/{ticker}` (`{event,
    markets}`) -> `events`, and their markets -> `markets`, which take their event's title, series and
    category. Markets are normalised whatever becomes of their event."""
    events = _records(body, "events", "events", "event")
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


def normalise_markets(
    body: Any, *, day: dt.date, fetched_at: dt.datetime, context: Mapping[str, str] | None = None
) -> dict[str, Normalised]:
    """`/markets` (`{markets, cursor}`) or `/markets/{ticker}` (`{market}`) -> `markets`."""
    records = _records(body, "markets", "markets", "market")
    return {"markets": _markets(records, direct_lineage(PLATFORM, day, fetched_at))}


_NO_PARENTS = pl.DataFrame(
    schema={**dict.fromkeys(("event_ticker", "_event_name", "_series_id", "_category"), pl.String),
            "_mutually_exclusive": pl.Boolean}
)


def _markets(records: list[Any], lineage: dict[str, Any], parents: pl.DataFrame = _NO_PARENTS) -> Normalised:
    native = _with_parents(read(MARKET_FIELDS, records), parents)
    decimals = _Decimals()
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
        "created_at": _time("created_time"),
        "trading_start_at": _time("open_time"),
        "trading_end_at": _time("close_time"),
        "resolution_date": pl.coalesce(_time("expected_expiration_time"), _time("expiration_time")),
        "resolved_at": _time("settlement_ts"),
        "resolution_criteria": pl.col("rules_primary"),
        "last_trade_price": last_trade,
        "settlement_value": settlement,
        "expiration_value": pl.col("expiration_value"),
        "metadata": _metadata(yes_bid, yes_ask),
    }
    problems = [
        status_problem,
        _unknown(pl.col("market_type"), market_type, "market_type", KALSHI_MARKET_TYPES),
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
    return status, _unknown(native, mapped, "status", KALSHI_STATUS)


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


def normalise_trades(
    body: Any, *, day: dt.date, fetched_at: dt.datetime, context: Mapping[str, str] | None = None
) -> dict[str, Normalised]:
    """`/markets/trades` (`{trades, cursor}`) -> `trades`: each is the taker's buy of its side (`_taker_side`) at
    that side's price, in polars expressions over the whole response (a hot path)."""
    native = read(TRADE_FIELDS, _records(body, "trades", "trades"))
    decimals = _Decimals()
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
        "timestamp": _time("created_time"),
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
        _unknown(outcome_side, outcome_side.replace_strict(_OUTCOMES, default=None), "taker_outcome_side", _OUTCOMES),
        _unknown(book_side, from_book, "taker_book_side", _BOOK_SIDES),
        _unknown(old_side, old_side.replace_strict(_OUTCOMES, default=None), "taker_side", _OUTCOMES),
        pl.when(side.is_null()).then(pl.lit(missing)),
    )
    return side, problem


def normalise_price_history(
    body: Any, *, day: dt.date, fetched_at: dt.datetime, context: Mapping[str, str] | None = None
) -> dict[str, Normalised]:
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
    return {"price_history": Normalised(rows, pl.concat([part.rejects for part in parts]))}


def _market_candles(
    records: list[Any], market_id: str | None, interval: int, lineage: dict[str, Any], asked: set[str]
) -> Normalised:
    """One market's candles as rows."""
    native = read(CANDLE_FIELDS, records)
    decimals = _Decimals()
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


def _traded_candle(decimals: _Decimals) -> pl.Expr:
    """The traded prices' OHLC. A period without trades (Kalshi's `price` OHLC null, `volume` 0) closes at the
    previous period's close, Kalshi's `price.previous` (a `previous` of 0 means never traded: no close), so that a
    market's series has no holes; its open, high and low stay null, and its `volume` of 0 says it had no trade."""
    ohlc = {key: decimals.dollars(key, within="price") for key in _OHLC}
    carried = _traded(decimals.dollars("previous", within="price"))
    return pl.struct(**{**ohlc, "close": pl.coalesce(ohlc["close"], carried)})


def _candle(decimals: _Decimals, within: str) -> pl.Expr:
    return pl.struct(**{key: decimals.dollars(key, within=within) for key in _OHLC})


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
    records = _records(body, "price_history", "candlesticks")
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
