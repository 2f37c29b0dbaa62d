"""Kalshi's own public API v2 over the sandbox world, in the shapes of the recorded fixtures
(tests/fixtures/kalshi): series, events, markets (multivariate ones included unless `mve_filter=exclude`),
trades, candlesticks, and the historical tier behind `/historical/cutoff`.

Values derive from the world's unified records, so both paths read the same market, trade and price.
Statuses map so that pipeline.engine.normalize.mappings maps them back: open -> active, paused -> inactive,
resolved -> finalized with result yes/no (the winner: outcome 0 is Yes; a scalar market: result `scalar`, paying
its `settlement_value_dollars`), cancelled -> finalized with an empty result (a voided market). Never-traded markets
stand at a `last_price` of 0, the deprecated `liquidity_dollars` at "0.0000"; series carry fees; the batch
`/markets/candlesticks` is served. The fields' own shapes (prices, counts, legs, settlement, trades, candles) are
native_kalshi_fields.py's.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from functools import cached_property
from typing import TypeVar

import numpy as np

from pipeline.engine.schema import MarketStatus, MarketType, Platform
from pmw_sandbox.activity import period_ohlc
from pmw_sandbox.catalogue import Event, Market, Series
from pmw_sandbox.native_http import NativeError, Params, Record, decode_cursor, encode_cursor
from pmw_sandbox.native_http import kalshi_error as _error
from pmw_sandbox.native_kalshi_fields import (
    book,
    candle,
    counted,
    dollars,
    expiration_value,
    leg_of,
    previous_closes,
    priced,
    result,
    settlement,
    trade,
)
from pmw_sandbox.router import Handler
from pmw_sandbox.world import World, iso

MAX_EVENTS_LIMIT, MAX_MARKETS_LIMIT, MAX_TRADES_LIMIT = 200, 1000, 1000
BATCH_MAX_TICKERS, BATCH_MAX_CANDLES = 100, 10_000  # `/markets/candlesticks`, as Kalshi documents it
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


def _bad_number(name: str, value: str) -> NativeError:
    return _error(400, "invalid_parameters", f"{name}: {value!r} is not an integer")


class KalshiNative:
    """Renders the world's Kalshi catalogue (the platform's view: multivariate markets included)."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.cutoff = world.config.window_start + timedelta(days=HISTORICAL_DAYS)
        self.cutoff_ts = int(self.cutoff.timestamp())

    def routes(self) -> dict[str, Handler]:
        return {
            "/kalshi/series": self.series_list,
            "/kalshi/series/{ticker}": self.series_one,
            "/kalshi/events": self.events,
            "/kalshi/events/{ticker}": self.event_one,
            "/kalshi/markets": self.markets,
            "/kalshi/markets/{ticker}": self.market_one,
            "/kalshi/markets/trades": self.trades,
            "/kalshi/markets/candlesticks": self.batch_candlesticks,
            "/kalshi/series/{series}/markets/{ticker}/candlesticks": self.candlesticks,
            "/kalshi/historical/cutoff": self.cutoff_record,
            "/kalshi/historical/markets": lambda params: self.markets(params, historical=True),
            "/kalshi/historical/trades": lambda params: self.trades(params, historical=True),
            "/kalshi/historical/markets/{ticker}/candlesticks": lambda params, ticker: self.candlesticks(
                params, None, ticker
            ),
        }

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

    def series_one(self, _params: Params, ticker: str) -> Record:
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

    def event_one(self, _params: Params, ticker: str) -> Record:
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

    def market_one(self, _params: Params, ticker: str) -> Record:
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
        leg = leg_of(market)
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
            "result": result(market, yes["price"]),
            "can_close_early": True,
            "expiration_value": expiration_value(market, leg, yes["price"]),
            "response_price_units": "usd_cent",
            "price_level_structure": "linear_cent",
            "price_ranges": [{"end": "1.0000", "start": "0.0000", "step": "0.0100"}],
            "tick_size": 1,
            "rules_primary": record["resolution_criteria"],
            "rules_secondary": "",
            **priced("last_price", last),
            **priced("previous_price", last),
            **book(yes, no, empty=status in _STATUS_FILTER["settled"] or not len(act.ts)),
            **priced("notional_value", 1.0),
            "liquidity": 0,  # deprecated by Kalshi: "will always return 0"
            "liquidity_dollars": dollars(0.0),
            **counted("volume", volume),
            **counted("volume_24h", float(act.size[act.ts >= as_of_s - 86_400].sum())),
            **counted("open_interest", round(volume * 0.35)),
        }
        if market.multivariate:
            kalshi["mve_collection_ticker"] = market.event_id
            kalshi["mve_selected_legs"] = []
        else:
            kalshi |= {"strike_type": leg.strike_type, "floor_strike": leg.floor, "cap_strike": leg.cap}
        return kalshi | settlement(market, yes["price"], self.settled_at(market))

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
            "trades": [trade(market, r, with_taker_side=historical) for r in records],
        }

    def _trade_window(self, params: Params, historical: bool) -> tuple[int, int | None]:
        """The asked `[min_ts, max_ts]`, cut at the cutoff: the live tier serves trades from it on, the
        historical tier the ones before it."""
        low = params.integer("min_ts", 0, _bad_number) or 0
        high = params.integer("max_ts", None, _bad_number)
        if historical:
            return low, self.cutoff_ts - 1 if high is None else min(high, self.cutoff_ts - 1)
        return max(low, self.cutoff_ts), high

    def candlesticks(self, params: Params, series: str | None, ticker: str) -> Record:
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
        previous = previous_closes(act, edges[:-1], interval)
        return [
            candle(int(t) + width, ohlc[k], market.tick, int(counts[k]), float(volume[k]), float(traded[edges[k + 1]]),
                    previous[k])
            for k, t in enumerate(starts.tolist())
        ]


def _candle_window(params: Params) -> tuple[int, int, int]:
    interval = params.integer("period_interval", None, _bad_number)
    start, end = (params.integer(n, None, _bad_number) for n in ("start_ts", "end_ts"))
    if interval not in CANDLE_INTERVALS or start is None or end is None:
        raise _error(400, "invalid_parameters", "start_ts, end_ts and period_interval (1, 60, 1440) are required")
    return start, end, interval


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
