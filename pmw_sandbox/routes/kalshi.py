"""Kalshi's own public API v2 over the sandbox world, in the shapes of the recorded fixtures
(tests/fixtures/kalshi): series, events, markets (multivariate ones included unless `mve_filter=exclude`),
trades, candlesticks, and the historical tier behind `/historical/cutoff`.

Values derive from the world's unified records, so both paths read the same market, trade and price.
Prices are sent twice, as dollar strings (`yes_bid_dollars: "0.4200"`) and deprecated integer cents; counts
as fixed-point strings (`volume_fp`) and integers. Statuses map so that pipeline.engine.normalize.mappings maps them
back: open -> active, paused -> inactive, resolved -> finalized with result yes/no (the winner: outcome 0 is
Yes; a scalar market: result `scalar`, paying its `settlement_value_dollars`), cancelled -> finalized with an
empty result (a voided market).

The shapes Kalshi's fields take, each derived from the world (see `_legs`): the legs of mutually exclusive
events (temperature brackets, a game's two teams) titled with the world's title and named by `yes_sub_title`;
strikes (`strike_type`, `floor_strike`, `cap_strike`) read from the tickers; settled markets with
`settlement_ts` (and scalars with `settlement_value_dollars`, `expiration_value`); never-traded markets at a
`last_price` of 0; the deprecated `liquidity_dollars` at "0.0000"; series fees; trades with
`taker_outcome_side`, `taker_book_side` and `is_block_trade` (the deprecated `taker_side` only on the
historical tier); and the batch `/markets/candlesticks`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import cached_property
from typing import TypeVar

import numpy as np

from pipeline.engine.schema import MarketStatus, MarketType, Platform
from pmw_sandbox.activity import MarketActivity, period_ohlc
from pmw_sandbox.catalogue import Event, Market, Series
from pmw_sandbox.native_http import NativeError, Params, Record, decode_cursor, encode_cursor, iso_seconds
from pmw_sandbox.native_http import kalshi_error as _error
from pmw_sandbox.world import World, iso

MAX_EVENTS_LIMIT, MAX_MARKETS_LIMIT, MAX_TRADES_LIMIT = 200, 1000, 1000
BATCH_MAX_TICKERS, BATCH_MAX_CANDLES = 100, 10_000  # `/markets/candlesticks`, as Kalshi documents it
BLOCK_TRADE_SIZE = 250  # the sandbox's block trades: the largest prints
# Events of which one market at most resolves yes: one bracket of a temperature, one team of a game.
_EXCLUSIVE_SERIES = ("KXHIGHNY", "KXNBAGAME")
_SERIES_FEES = (("KXNBAGAME", "quadratic_with_maker_fees", 0.5), ("KXCPIYOY", "flat", 1.0))  # else quadratic, 1
DEFAULT_LIMIT = 100
CANDLE_INTERVALS = (1, 60, 1440)
_T = TypeVar("_T")
HISTORICAL_DAYS = 1  # days at the start of the world that only the historical tier serves
_NATIVE_STATUS = {
    MarketStatus.OPEN: "active",
    MarketStatus.PAUSED: "inactive",
    MarketStatus.RESOLVED: "finalized",
    MarketStatus.CANCELLED: "finalized",
}
# The `status` query filter's vocabulary, as the world's statuses.
_STATUS_FILTER = {
    "unopened": (),
    "open": (MarketStatus.OPEN,),
    "paused": (MarketStatus.PAUSED,),
    "closed": (),
    "settled": (MarketStatus.RESOLVED, MarketStatus.CANCELLED),
}


def _dollars(price: float) -> str:
    return f"{price:.4f}"


def _cents(price: float) -> int:
    return round(price * 100)


def _priced(name: str, price: float) -> Record:
    """A price as Kalshi sends it since 2026: the dollar string beside the deprecated integer cents."""
    return {name: _cents(price), f"{name}_dollars": _dollars(price)}


def _book(yes: Record, no: Record, *, empty: bool) -> Record:
    """The best quotes of both sides; an empty book (a settled market, or one that never traded) as Kalshi writes
    one (the recorded never-traded market): Yes bid and ask 0, No bid and ask 100 cents, prices no order rests at."""
    if empty:
        quotes = {"yes_bid": 0.0, "yes_ask": 0.0, "no_bid": 1.0, "no_ask": 1.0}
    else:
        quotes = {f"{name}_{side}": prices.get(side, prices["price"])
                  for name, prices in (("yes", yes), ("no", no)) for side in ("bid", "ask")}
    previous = {f"previous_{name}": quotes[name] for name in ("yes_bid", "yes_ask")}
    return {key: value for name, price in (quotes | previous).items() for key, value in _priced(name, price).items()}


def _counted(name: str, count: float) -> Record:
    return {name: int(count), f"{name}_fp": f"{count:.2f}"}


def _bad_number(name: str, value: str) -> NativeError:
    return _error(400, "invalid_parameters", f"{name}: {value!r} is not an integer")


class KalshiNative:
    """Renders the world's Kalshi catalogue (the platform's view: multivariate markets included)."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.cutoff = world.config.window_start + timedelta(days=HISTORICAL_DAYS)
        self.cutoff_ts = int(self.cutoff.timestamp())

    @cached_property
    def _markets(self) -> dict[str, Market]:
        return {m.id: m for m in self.world.all_markets(Platform.KALSHI)}

    @cached_property
    def _events(self) -> dict[str, Event]:
        return {e.id: e for e in self.world.catalogues[Platform.KALSHI].events}

    @cached_property
    def _series(self) -> dict[str, Series]:
        return {s.id: s for s in self.world.catalogues[Platform.KALSHI].series}

    def settled_before_cutoff(self, market: Market) -> bool:
        """Markets settled before the cutoff are served only by `/historical/markets`."""
        settled = self.settled_at(market)
        return settled is not None and settled < self.cutoff

    # -- series and events ---------------------------------------------------------------------------

    def cutoff_record(self, _params: Params) -> Record:
        moment = iso(self.cutoff)
        return {"market_settled_ts": moment, "trades_created_ts": moment, "orders_updated_ts": moment}

    def series_list(self, _params: Params) -> Record:
        return {"series": [self._series_record(s) for s in self._series.values()]}

    def series_one(self, ticker: str) -> Record:
        series = self._series.get(ticker)
        if series is None:
            raise _error(404, "not_found", f"series {ticker} not found")
        return {"series": self._series_record(series)}

    def _series_record(self, series: Series) -> Record:
        fee_type, fee_multiplier = next(
            ((kind, multiplier) for prefix, kind, multiplier in _SERIES_FEES if series.id.startswith(prefix)),
            ("quadratic", 1),
        )
        return {
            "ticker": series.id,
            "frequency": "daily" if series.id.startswith(("KXBTCD", "KXHIGHNY", "KXNBAGAME")) else "custom",
            "title": series.title,
            "category": series.category,
            "tags": list(series.tags),
            "settlement_sources": [{"name": "Sandbox", "url": "https://resolution.sandbox.invalid/"}],
            "contract_url": f"https://docs.sandbox.invalid/{series.id}.pdf",
            "contract_terms_url": f"https://docs.sandbox.invalid/terms/{series.id}.pdf",
            "fee_type": fee_type,
            "fee_multiplier": fee_multiplier,
            "additional_prohibitions": None,
        }

    def events(self, params: Params) -> Record:
        """`/events`: non-multivariate events (Kalshi lists those under `/events/multivariate`)."""
        series, status = params.text("series_ticker"), params.text("status")
        wanted = _STATUS_FILTER.get(status or "") if status else None
        if status and wanted is None:
            raise _error(400, "invalid_parameters", f"status: {status!r} is not one of open, closed, settled")
        events = [
            e
            for e in self.world.events(Platform.KALSHI)
            if (series is None or e.series_id == series) and (wanted is None or self._event_status(e) in wanted)
        ]
        page, cursor = _page(events, params, MAX_EVENTS_LIMIT)
        nested = params.flag("with_nested_markets") is True
        return {"cursor": cursor, "events": [self._event_record(e, nested) for e in page], "milestones": []}

    def _event_status(self, event: Event) -> MarketStatus:
        """An event is open while one market is, settled when all are."""
        statuses = {m.status for m in self.world.event_markets(event)}
        if MarketStatus.OPEN in statuses:
            return MarketStatus.OPEN
        return MarketStatus.PAUSED if MarketStatus.PAUSED in statuses else MarketStatus.RESOLVED

    def event_one(self, ticker: str) -> Record:
        event = self._events.get(ticker)
        if event is None:
            raise _error(404, "not_found", f"event {ticker} not found")
        markets = [m for m in self._markets.values() if m.event_id == event.id]
        return {"event": self._event_record(event, False), "markets": [self.market(m) for m in markets]}

    def _event_record(self, event: Event, nested: bool) -> Record:
        record: Record = {
            "available_on_brokers": False,
            "category": event.category,
            "collateral_return_type": "",
            "event_ticker": event.id,
            "mutually_exclusive": event.series_id.startswith(_EXCLUSIVE_SERIES),
            "series_ticker": event.series_id,
            "strike_period": "",
            "sub_title": f"On {event.end.date().isoformat()}",
            "title": event.title,
        }
        if nested:
            record["markets"] = [self.market(m) for m in self.world.event_markets(event)]
        return record

    # -- markets -------------------------------------------------------------------------------------

    def markets(self, params: Params, historical: bool = False) -> Record:
        chosen = [
            m
            for m in self._markets.values()
            if self.settled_before_cutoff(m) == historical and _market_matches(m, params)
        ]
        page, cursor = _page(chosen, params, MAX_MARKETS_LIMIT)
        return {"cursor": cursor, "markets": [self.market(m) for m in page]}

    def market_one(self, ticker: str) -> Record:
        market = self._markets.get(ticker)
        if market is None or self.settled_before_cutoff(market):
            raise _error(404, "not_found", f"market {ticker} not found")
        return {"market": self.market(market)}

    def market(self, market: Market) -> Record:
        record = self.world.market_record(market)
        act = self.world.activity(market)
        as_of_s = int(self.world.as_of.timestamp())
        yes, no = (record["current_prices"][o.id] for o in market.outcomes[:2])
        status = market.status
        volume = float(act.size.sum())
        last = yes["price"] if len(act.ts) else 0.0  # Kalshi writes "never traded" as a last price of 0
        close = market.trading_end
        leg = _legs(market)
        kalshi: Record = {
            "ticker": market.id,
            "event_ticker": market.event_id,
            "market_type": "scalar" if market.market_type == MarketType.SCALAR else "binary",
            "title": market.title,
            "subtitle": leg.subtitle,
            "yes_sub_title": leg.label,
            "no_sub_title": leg.label,
            "created_time": iso(market.created_at),
            "open_time": iso(market.trading_start),
            "close_time": iso(close),
            "expected_expiration_time": iso(close),
            "expiration_time": iso(close + timedelta(days=7)),
            "latest_expiration_time": iso(close + timedelta(days=7)),
            "settlement_timer_seconds": 1800,
            "status": _NATIVE_STATUS[status],
            "result": _result(market, yes["price"]),
            "can_close_early": True,
            "expiration_value": _expiration_value(market, leg, yes["price"]),
            "response_price_units": "usd_cent",
            "price_level_structure": "linear_cent",
            "price_ranges": [{"end": "1.0000", "start": "0.0000", "step": "0.0100"}],
            "tick_size": 1,
            "rules_primary": record["resolution_criteria"],
            "rules_secondary": "",
            **_priced("last_price", last),
            **_priced("previous_price", last),
            **_book(yes, no, empty=status in _STATUS_FILTER["settled"] or not len(act.ts)),
            **_priced("notional_value", 1.0),
            "liquidity": 0,  # deprecated by Kalshi: "will always return 0"
            "liquidity_dollars": _dollars(0.0),
            **_counted("volume", volume),
            **_counted("volume_24h", float(act.size[act.ts >= as_of_s - 86_400].sum())),
            **_counted("open_interest", round(volume * 0.35)),
        }
        if market.multivariate:
            kalshi["mve_collection_ticker"] = market.event_id
            kalshi["mve_selected_legs"] = []
        else:
            kalshi |= {"strike_type": leg.strike_type, "floor_strike": leg.floor, "cap_strike": leg.cap}
        return kalshi | _settlement(market, yes["price"], self.settled_at(market))

    def settled_at(self, market: Market) -> datetime | None:
        """When a settled (resolved or voided) market settled; None while it is not settled."""
        if market.status not in (MarketStatus.RESOLVED, MarketStatus.CANCELLED):
            return None
        return market.resolved_at or market.stopped_at or market.trading_end

    # -- trades and candlesticks ---------------------------------------------------------------------

    def trades(self, params: Params, historical: bool = False) -> Record:
        """`/markets/trades` (trades since the cutoff) or `/historical/trades` (before it), newest first."""
        ticker = params.text("ticker")
        market = self._markets.get(ticker or "")
        if market is None:
            raise _error(400, "invalid_parameters", f"ticker: {ticker!r} is not a known market ticker")
        low, high = self._trade_window(params, historical)
        ts = self.world.activity(market).ts
        first = int(np.searchsorted(ts, low, "left"))
        last = len(ts) if high is None else int(np.searchsorted(ts, high, "right"))
        count = max(last - first, 0)
        offset, limit = _cursor_offset(params), _limit(params, MAX_TRADES_LIMIT)
        taken = max(min(limit, count - offset), 0)
        records = self.world.trade_records(market, len(ts) - last + offset, taken) if taken else []
        more = offset + taken < count
        return {
            "cursor": encode_cursor(offset + taken) if more else "",
            "trades": [_trade(market, r, with_taker_side=historical) for r in records],
        }

    def _trade_window(self, params: Params, historical: bool) -> tuple[int, int | None]:
        """The asked `[min_ts, max_ts]`, cut at the cutoff: the live tier serves trades from it on, the
        historical tier the ones before it."""
        low = params.integer("min_ts", 0, _bad_number) or 0
        high = params.integer("max_ts", None, _bad_number)
        if historical:
            return low, self.cutoff_ts - 1 if high is None else min(high, self.cutoff_ts - 1)
        return max(low, self.cutoff_ts), high

    def candlesticks(self, series: str | None, ticker: str, params: Params) -> Record:
        """Yes-side candles labelled by period end; `price` OHLC is null in periods without trades, and
        `price.previous` is the last trade's Yes price before the period.

        `series` None is the historical tier (`/historical/markets/{ticker}/candlesticks`), which alone
        serves the markets settled before the cutoff, as `/historical/markets` does.
        """
        market = self._markets.get(ticker)
        historical = series is None
        if market is None or (not historical and market.series_id != series):
            raise _error(404, "not_found", f"market {ticker} not found in series {series}")
        if self.settled_before_cutoff(market) != historical:
            tier = "the live tier" if historical else "the historical tier (settled before the cutoff)"
            raise _error(404, "not_found", f"market {ticker} is served by {tier}")
        return {"ticker": market.id, "candlesticks": self._candles(market, *_candle_window(params))}

    def batch_candlesticks(self, params: Params) -> Record:
        """`/markets/candlesticks`: the candles of up to 100 markets (`market_tickers`), 10,000 at most in all,
        one entry per market the live tier serves (a market it does not know is left out)."""
        tickers = params.all("market_tickers")
        if not 1 <= len(tickers) <= BATCH_MAX_TICKERS:
            raise _error(400, "invalid_parameters",
                         f"market_tickers: 1 to {BATCH_MAX_TICKERS} tickers, got {len(tickers)}")
        start, end, interval = _candle_window(params)
        periods = max((end - start) // (interval * 60) + 1, 0)
        if periods * len(tickers) > BATCH_MAX_CANDLES:
            raise _error(400, "invalid_parameters", f"at most {BATCH_MAX_CANDLES} candlesticks per request")
        served = [self._markets[t] for t in tickers if t in self._markets]
        return {"markets": [
            {"market_ticker": m.id, "candlesticks": self._candles(m, start, end, interval)}
            for m in served if not self.settled_before_cutoff(m)
        ]}

    def _candles(self, market: Market, start: int, end: int, interval: int) -> list[Record]:
        """The market's candles whose period ends in [start, end]."""
        width = interval * 60
        act = self.world.activity(market)
        starts, ohlc = period_ohlc(act, 0, start - width, end - width, interval)
        edges = np.searchsorted(act.ts, np.append(starts, starts[-1] + width)) if len(starts) else np.zeros(1, int)
        counts = np.diff(edges)
        traded = np.concatenate([[0.0], np.cumsum(act.size)])
        volume = traded[edges[1:]] - traded[edges[:-1]]
        previous = _previous_closes(act, edges[:-1], interval)
        return [
            _candle(int(t) + width, ohlc[k], market.tick, int(counts[k]), float(volume[k]), float(traded[edges[k + 1]]),
                    previous[k])
            for k, t in enumerate(starts.tolist())
        ]


def _candle_window(params: Params) -> tuple[int, int, int]:
    interval = params.integer("period_interval", None, _bad_number)
    start, end = (params.integer(n, None, _bad_number) for n in ("start_ts", "end_ts"))
    if interval not in CANDLE_INTERVALS or start is None or end is None:
        raise _error(400, "invalid_parameters", "start_ts, end_ts and period_interval (1, 60, 1440) are required")
    return start, end, interval


def _result(market: Market, yes_price: float) -> str:
    if market.status != MarketStatus.RESOLVED:
        return ""
    if market.market_type == MarketType.SCALAR:
        return "scalar"
    return "yes" if yes_price >= 0.5 else "no"


@dataclass(frozen=True)
class _Leg:
    """How Kalshi names and bounds one market among its event's: the Yes side's short title, the subtitle,
    and the strike."""

    label: str
    subtitle: str
    strike_type: str
    floor: float | None = None
    cap: float | None = None


def _legs(market: Market) -> _Leg:
    """The market's leg, read from its ticker as the world builds it (`KXBTCD-...-T91000`, `KXHIGHNY-...-B46.5`,
    `KXFED-...-T3.75`, `KXCPIYOY-...-S2`, `KXNBAGAME-...-LAL`)."""
    suffix = market.id.rsplit("-", 1)[-1]
    if market.series_id.startswith(("KXBTCD", "KXFED")):
        floor = float(suffix[1:])
        shown = f"${floor:,.0f} or above" if market.series_id.startswith("KXBTCD") else f"Above {floor:.2f}%"
        return _Leg(shown, shown, "greater", floor=floor)
    if market.series_id.startswith("KXHIGHNY"):
        low = float(suffix[1:]) - 0.5
        shown = f"{low:.0f}° to {low + 1:.0f}°"
        return _Leg(shown, shown, "between", floor=low, cap=low + 1)
    if market.series_id.startswith("KXCPIYOY"):
        low = 2.0 + 0.5 * (int(suffix[1:]) - 1)
        return _Leg(f"{low:.1f}% to {low + 0.5:.1f}%", "", "between", floor=low, cap=low + 0.5)
    return _Leg(suffix, "", "custom")  # a team of a game


def _settlement(market: Market, yes_price: float, settled_at: datetime | None) -> Record:
    """Kalshi's settlement fields, sent once a market settled: when, and for a scalar what Yes paid."""
    if settled_at is None:
        return {}
    record: Record = {"settlement_ts": iso(settled_at)}
    if _result(market, yes_price) == "scalar":
        record |= _priced("settlement_value", yes_price)
    return record


def _expiration_value(market: Market, leg: _Leg, yes_price: float) -> str:
    """The value a settled scalar settled on: the bottom of its range, or the top when Yes (long) won."""
    if _result(market, yes_price) != "scalar" or leg.floor is None or leg.cap is None:
        return ""
    return f"{leg.floor + (leg.cap - leg.floor) * yes_price:.2f}"


def _market_matches(market: Market, params: Params) -> bool:
    status = params.text("status")
    if status is not None and status not in _STATUS_FILTER:
        raise _error(400, "invalid_parameters", f"status: {status!r} is not one of {', '.join(_STATUS_FILTER)}")
    mve = params.text("mve_filter")
    if mve not in (None, "only", "exclude"):
        raise _error(400, "invalid_parameters", f"mve_filter: {mve!r} is not one of only, exclude")
    close_s = int(market.trading_end.timestamp())
    low, high = (params.integer(n, None, _bad_number) for n in ("min_close_ts", "max_close_ts"))
    return (
        params.text("event_ticker") in (None, market.event_id)
        and params.text("series_ticker") in (None, market.series_id)
        and (status is None or market.status in _STATUS_FILTER[status])
        and (mve is None or market.multivariate == (mve == "only"))
        and (low is None or close_s >= low)
        and (high is None or close_s <= high)
    )


def _trade(market: Market, record: Record, with_taker_side: bool) -> Record:
    """A unified trade as Kalshi's: the taker bought its side (outcome 0 is Yes) at that side's price. The
    deprecated `taker_side` comes only `with_taker_side` (older data, from the historical tier)."""
    taker_yes = record["outcome"] == market.outcomes[0].name
    yes_price = record["price"] if taker_yes else round(1 - record["price"], 4)
    side = "yes" if taker_yes else "no"
    return {
        "trade_id": record["trade_id"],
        "ticker": market.id,
        "created_time": iso_seconds(record["timestamp"]),
        **({"taker_side": side} if with_taker_side else {}),
        "taker_outcome_side": side,
        "taker_book_side": "bid" if taker_yes else "ask",
        "is_block_trade": record["size"] >= BLOCK_TRADE_SIZE,
        **_counted("count", record["size"]),
        **_priced("yes_price", yes_price),
        **_priced("no_price", round(1 - yes_price, 4)),
        "price": yes_price,
    }


def _previous_closes(act: MarketActivity, first_trades: np.ndarray, interval: int) -> list[float | None]:
    """Per period (the index of its first trade, or of the first after it), Kalshi's `price.previous`: the close of
    the last period before it that had a trade (the Yes path at that period's end, as its candle closes); none
    before the market's first trade."""
    last_minutes = act.ts[np.maximum(first_trades - 1, 0)] // 60 if len(act.ts) else np.zeros(len(first_trades), int)
    period_ends = (last_minutes // interval + 1) * interval - act.start_minute
    closes = act.prices[0][np.clip(period_ends, 1, act.minutes) - 1]
    return [round(close, 4) if k else None for k, close in zip(first_trades.tolist(), closes.tolist(), strict=True)]


def _candle(end_ts: int, ohlc: np.ndarray, tick: float, trades: int, volume: float, traded: float,
            previous: float | None) -> Record:
    """One candle as Kalshi sends it: `price` OHLC null in a period without trades, `price.previous` the Yes price
    of the last trade before the period (none before the first trade)."""
    o, h, lo, c = (float(v) for v in ohlc)
    price: Record = {"close": None, "high": None, "low": None, "open": None, "max": None, "min": None, "mean": None}
    if trades:
        price = {**_ohlc(lambda p: p, o, h, lo, c), "max": None, "min": None, "mean": _cents(c)}
    if previous is not None:
        price |= _priced("previous", previous)
    return {
        "end_period_ts": end_ts,
        "price": price,
        "yes_bid": _ohlc(lambda p: max(p - tick, 0.0), o, h, lo, c),
        "yes_ask": _ohlc(lambda p: min(p + tick, 1.0), o, h, lo, c),
        **_counted("volume", volume),
        **_counted("open_interest", round(traded * 0.35)),
    }


def _ohlc(shift: Callable[[float], float], o: float, h: float, lo: float, c: float) -> Record:
    values = {"open": o, "high": h, "low": lo, "close": c}
    return {k: v for name, p in values.items() for k, v in _priced(name, round(shift(p), 4)).items()}


def _cursor_offset(params: Params) -> int:
    token = params.text("cursor")
    if token is None:
        return 0
    try:
        return decode_cursor(token)
    except ValueError:
        raise _error(400, "invalid_cursor", "cursor is not one this service issued") from None


def _limit(params: Params, maximum: int) -> int:
    limit = params.integer("limit", DEFAULT_LIMIT, _bad_number) or DEFAULT_LIMIT
    if not 1 <= limit <= maximum:
        raise _error(400, "invalid_parameters", f"limit: must be between 1 and {maximum}, got {limit}")
    return limit


def _page(items: list[_T], params: Params, maximum: int) -> tuple[list[_T], str]:
    """One cursor page; the cursor is empty when the list is done."""
    offset, limit = _cursor_offset(params), _limit(params, maximum)
    page = items[offset : offset + limit]
    return page, encode_cursor(offset + limit) if offset + limit < len(items) else ""
