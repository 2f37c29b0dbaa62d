"""Kalshi's own responses (public API v2) -> the warehouse tables, with `_source` = `direct`.

Endpoints read: `/series` (and `/series/{ticker}`), `/events` (with nested markets or not, and
`/events/{ticker}`), `/markets` (and `/markets/{ticker}`), `/markets/trades` and
`/series/{series}/markets/{ticker}/candlesticks`.

Prices: since 2026 Kalshi sends fixed-point dollar strings (`yes_bid_dollars: "0.4200"`) and fixed-point
counts (`volume_fp`, `count_fp`) beside the deprecated integer cents and integer counts. The new fields are
read first, the old ones only when a new one is absent; a new field that is no number rejects its record
rather than fall back silently. Prices are stored in dollars (0..1), counts in contracts.

Which native field feeds which column, and the status and market-type tables, are in
`pipeline.engine.normalize.mappings` (rendered in docs/schema.md); the status and market-type tables are read from
there. Columns those tables do not name stay null, because Kalshi does not send them:
- series: slug, description, image_url, event_count, market_count, total_volume.
- events: slug, description, image_url, resolution_source_url, event_start_at, event_end_at, total_volume.
- markets: event_slug, slugs, description, subcategory, tags, volume_7d, unique_traders, fees, URLs,
  resolved_at, resolution_source, price changes, last_trades; event_name, series_id and category are
  filled only for markets that come with their event (`/events`).
- trades: transaction_hash and user (Kalshi trades are anonymous).
- price_history: every column; Kalshi candles price the Yes side, so every outcome_id is `yes`.

Multivariate (MVE: `KXMVE...` tickers, `mve_collection_ticker`) markets are normalised like any other: the
caller keeps them out with `mve_filter=exclude`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
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
    finish,
    iso_text,
    number,
    parse_iso,
    parse_unix,
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

PLATFORM = Platform.KALSHI.value
_GO_ZERO_TIME = "0001-01-01T00:00:00Z"  # Go's zero time.Time: how Kalshi writes an unknown time
_OHLC = ("open", "high", "low", "close")
_RESULTS = ("yes", "no", "scalar")
_OUTCOMES = {"yes": "Yes", "no": "No"}


def _dollars_fields(*names: str) -> tuple[Field, ...]:
    """A price as Kalshi sends it twice: `{name}_dollars` (a decimal string) and `{name}` (integer cents)."""
    return tuple(field for name in names for field in (text(f"{name}_dollars"), number(name)))


def _count_fields(*names: str) -> tuple[Field, ...]:
    """A count as Kalshi sends it twice: `{name}_fp` (a fixed-point string) and `{name}` (an integer)."""
    return tuple(field for name in names for field in (text(f"{name}_fp"), number(name)))


SERIES_FIELDS = (text("ticker", required=True), text("title", required=True), text("category"), texts("tags"))
EVENT_FIELDS = (
    text("event_ticker", required=True),
    text("title", required=True),
    text("series_ticker"),
    text("category"),
)
MARKET_FIELDS = (
    text("ticker", required=True),
    text("title", required=True),
    text("status", required=True),
    text("market_type", required=True),
    text("event_ticker"),
    text("result"),
    *_dollars_fields("last_price", "yes_bid", "yes_ask", "no_bid", "no_ask", "liquidity"),
    *_count_fields("volume", "volume_24h", "open_interest"),
    iso_text("created_time"),
    iso_text("open_time"),
    iso_text("close_time"),
    iso_text("expected_expiration_time"),
    iso_text("expiration_time"),
    text("rules_primary"),
)
TRADE_FIELDS = (
    text("trade_id", required=True),
    text("ticker", required=True),
    iso_text("created_time", required=True),
    text("taker_side", required=True),
    *_count_fields("count"),
    *_dollars_fields("yes_price", "no_price"),
)
CANDLE_FIELDS = (
    unix_number("end_period_ts", required=True),
    struct("price", *_dollars_fields(*_OHLC), required=True),
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
        """A price in dollars: `{name}_dollars`, else `{name}` (integer cents) / 100."""
        return self._either(f"{name}_dollars", name, 100, within, required)

    def count(self, name: str, *, required: bool = False) -> pl.Expr:
        """A number of contracts: `{name}_fp`, else `{name}`."""
        return self._either(f"{name}_fp", name, 1, None, required)

    def _either(self, new: str, old: str, divisor: int, within: str | None, required: bool) -> pl.Expr:
        path = f"{within}." if within else ""
        value, problem = decimal(_field(new, within), f"{path}{new}")
        value = pl.coalesce(value, _field(old, within) / divisor)  # / 100, not * 0.01: 57 cents is 0.57
        self.problems.append(problem)
        if required:
            missing = f"missing required field '{path}{new}' (or '{path}{old}')"
            self.problems.append(pl.when(value.is_null()).then(pl.lit(missing)))
        return value


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
    }
    lineage = direct_lineage(PLATFORM, day, fetched_at)
    parents = native.frame.select(
        "event_ticker", _event_name=pl.col("title"), _series_id=pl.col("series_ticker"), _category=pl.col("category")
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


_NO_PARENTS = pl.DataFrame(schema=dict.fromkeys(("event_ticker", "_event_name", "_series_id", "_category"), pl.String))


def _markets(records: list[Any], lineage: dict[str, Any], parents: pl.DataFrame = _NO_PARENTS) -> Normalised:
    native = _with_parents(read(MARKET_FIELDS, records), parents)
    decimals = _Decimals()
    status, status_problem = _status()
    market_type = pl.col("market_type").replace_strict(_values(KALSHI_MARKET_TYPES), default=None)
    yes_bid, yes_ask = book_quote(decimals.dollars("yes_bid")), book_quote(decimals.dollars("yes_ask"))
    yes_price = _settled_yes_price(_traded(decimals.dollars("last_price", required=True)))
    columns = {
        "id": pl.col("ticker"),
        "platform_id": pl.col("ticker"),
        "event_id": pl.col("event_ticker"),
        "event_name": pl.col("_event_name"),
        "series_id": pl.col("_series_id"),
        "title": pl.col("title"),
        "category": pl.col("_category"),
        "status": status,
        "market_type": market_type,
        "outcomes": pl.concat_list([pl.struct(id=pl.lit(key), name=pl.lit(name)) for key, name in _OUTCOMES.items()]),
        "current_prices": pl.concat_list(  # no entries for a market without a price (never traded)
            pl.struct(key=pl.lit("yes"), price=yes_price, bid=yes_bid, ask=yes_ask),
            pl.struct(
                key=pl.lit("no"),
                price=(1 - yes_price).round(4),
                bid=book_quote(decimals.dollars("no_bid")),
                ask=book_quote(decimals.dollars("no_ask")),
            ),
        ).list.filter(pl.element().struct.field("price").is_not_null()),
        "volume_24h_contracts": decimals.count("volume_24h"),
        "volume_total_contracts": decimals.count("volume"),
        "liquidity": decimals.dollars("liquidity"),
        "open_interest_contracts": decimals.count("open_interest"),
        "created_at": _time("created_time"),
        "trading_start_at": _time("open_time"),
        "trading_end_at": _time("close_time"),
        "resolution_date": pl.coalesce(_time("expected_expiration_time"), _time("expiration_time")),
        "resolution_criteria": pl.col("rules_primary"),
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


def _traded(last_price: pl.Expr) -> pl.Expr:
    """The last trade's price, or null for a market that never traded: Kalshi writes that as `last_price` 0
    (no contract trades at 0 or at 1 dollar)."""
    return pl.when((last_price > 0) & (last_price < 1)).then(last_price)


def _settled_yes_price(last_price: pl.Expr) -> pl.Expr:
    """The Yes price: 1 or 0 once `result` says yes or no (what a contract pays), else the last trade's."""
    result = pl.col("result")
    return pl.when(result == "yes").then(1.0).when(result == "no").then(0.0).otherwise(last_price)


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
    """`/markets/trades` (`{trades, cursor}`) -> `trades`: each is the taker's buy of `taker_side` at that
    side's price, in polars expressions over the whole response (a hot path)."""
    native = read(TRADE_FIELDS, _records(body, "trades", "trades"))
    decimals = _Decimals()
    side = pl.col("taker_side")
    yes = decimals.dollars("yes_price", required=True)
    no = pl.coalesce(decimals.dollars("no_price"), (1 - yes).round(4))
    outcome = side.replace_strict(_OUTCOMES, default=None)
    columns = {
        "trade_id": pl.col("trade_id"),
        "market_id": pl.col("ticker"),
        "side": pl.lit("buy"),
        "price": pl.when(side == "yes").then(yes).when(side == "no").then(no),
        "size": decimals.count("count", required=True),
        "timestamp": _time("created_time"),
        "outcome": outcome,
        "taker": pl.lit(True),
        "metadata": pl.struct(taker_side=side, yes_price=yes, no_price=no).struct.json_encode(),
    }
    problems = [_unknown(side, outcome, "taker_side", _OUTCOMES), *decimals.problems]
    return {"trades": finish(TABLES["trades"], native, columns, problems, direct_lineage(PLATFORM, day, fetched_at))}


def normalise_price_history(
    body: Any, *, day: dt.date, fetched_at: dt.datetime, context: Mapping[str, str] | None = None
) -> dict[str, Normalised]:
    """Candlesticks (`{ticker, candlesticks}`) -> `price_history`, labelled by period start.

    Kalshi labels a candle by `end_period_ts`; the warehouse labels it by its period's start, which is the
    end minus `context["period_interval"]` minutes (the request's interval: the response does not say it).
    A `price` OHLC that is null (a period without trades) stays null.
    """
    interval = _period_interval(context)
    records, market_id = _candles(body, context)
    native = read(CANDLE_FIELDS, records)
    decimals = _Decimals()
    columns = {
        "timestamp": parse_unix(pl.col("end_period_ts") - interval * 60),
        "price": _candle(decimals, "price"),
        "market_id": pl.lit(market_id, pl.String),
        "volume": decimals.count("volume"),
        "open_interest": decimals.count("open_interest"),
        "bid_ask": pl.struct(bid=_candle(decimals, "yes_bid"), ask=_candle(decimals, "yes_ask")),
        "outcome_id": pl.lit("yes"),
    }
    problems = list(decimals.problems)
    if market_id is None:
        problems.append(pl.lit("the response names no market: no 'ticker', and no market_id in the context"))
    lineage = direct_lineage(PLATFORM, day, fetched_at)
    return {"price_history": finish(TABLES["price_history"], native, columns, problems, lineage)}


def _candle(decimals: _Decimals, within: str) -> pl.Expr:
    return pl.struct(**{key: decimals.dollars(key, within=within) for key in _OHLC})


def _candles(body: Any, context: Mapping[str, str] | None) -> tuple[list[Any], str | None]:
    """The candles, and the market they are of: the response's `ticker`, else the context's `market_id`."""
    records = _records(body, "price_history", "candlesticks")
    ticker = body.get("ticker")
    if ticker is not None and not isinstance(ticker, str):
        raise shape_error("kalshi price_history", 'a "ticker" string', ticker)
    return records, ticker or (context or {}).get("market_id")


def _period_interval(context: Mapping[str, str] | None) -> int:
    text_value = (context or {}).get("period_interval", "")
    allowed = ", ".join(map(str, PRICE_HISTORY_INTERVALS))
    if not text_value.isdigit() or int(text_value) not in PRICE_HISTORY_INTERVALS:
        raise ValueError(
            f"kalshi price_history: context needs period_interval, the candles' minutes ({allowed}), "
            f"got {text_value or 'none'!r}"
        )
    return int(text_value)
