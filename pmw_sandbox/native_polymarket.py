"""Polymarket's own endpoints over the sandbox world: Gamma `/markets`, `/events`, `/series`, CLOB
`/prices-history` and Data API `/trades`, in the shapes of the recorded fixtures (tests/fixtures/polymarket).

Every value derives from the world's unified records, so the direct and the unified path read the same market,
trade and price. Flags follow pipeline.engine.normalize.mappings.POLYMARKET_STATUS_RULES: open -> active, not
closed, accepting orders; paused -> active, not closed, not accepting orders; resolved -> closed,
`umaResolutionStatus` resolved, winner's price 1; cancelled -> closed, resolved 50-50. The real answers' shapes come
out of the world deterministically: legacy resolved binary markets (one in four, by id) with placeholder prices
`["0", "0"]` and no UMA status; resolved scalars with their payout and bounds; the legs of multi-market events
(`groupItemTitle`; `negRiskMarketID` when negative-risk); fee schedules; early closes (`closedTime`, when trading
stopped, before `endDate`); a market still open past its `endDate` (pmw_sandbox.catalogue_builder); zero volumes
left out, as Gamma does; the Data API's makers' rows beside each taker's (`takerOnly=false`); anonymous traders
(empty name, pseudonym and image: one wallet in sixteen); `/events/pagination`, a page as `{data, pagination}`.
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from functools import cached_property
from typing import TypeVar

import numpy as np
import orjson

from pipeline.engine.schema import MarketStatus, MarketType, Platform
from pmw_sandbox.activity import period_ohlc
from pmw_sandbox.catalogue import Event, Market, Series
from pmw_sandbox.native_http import NativeError, Params, Record, parse_time, polymarket_error
from pmw_sandbox.router import Handler
from pmw_sandbox.world import World, iso

GAMMA_MAX_OFFSET = 10_000  # Gamma refuses deeper offset paging on /markets (use /markets/keyset)
GAMMA_DEFAULT_LIMIT, GAMMA_MAX_LIMIT = 100, 500
DATA_API_MAX_OFFSET = 3_000  # the Data API stops paging past this offset
DATA_API_DEFAULT_LIMIT, DATA_API_MAX_LIMIT = 100, 10_000
_CLOSED = (MarketStatus.RESOLVED, MarketStatus.CANCELLED)
_IMAGES = "https://images.sandbox.invalid"
_LEGACY_EVERY = 4  # one resolved binary market in four (by id) is a legacy one, with placeholder prices
_SCALAR_BOUNDS = ("0", "100")
_T = TypeVar("_T")


def _json_strings(values: list[str]) -> str:
    """Gamma writes `outcomes`, `outcomePrices` and `clobTokenIds` as JSON arrays inside strings."""
    return orjson.dumps(values).decode()


def _closed_time(moment: datetime) -> str:
    """Gamma writes `closedTime` as `2026-05-09 02:07:01+00`."""
    return iso(moment).replace("T", " ").replace("Z", "+00")


def _bad_number(name: str, value: str) -> NativeError:
    return polymarket_error(422, f"invalid {name}: {value!r} is not an integer")


class PolymarketNative:
    """Renders the world's Polymarket catalogue and activity as Gamma, CLOB and Data API answers."""

    def __init__(self, world: World) -> None:
        self.world = world

    def routes(self) -> dict[str, Handler]:
        return {
            "/polymarket/gamma/markets": self.markets,
            "/polymarket/gamma/events": self.events,
            "/polymarket/gamma/events/pagination": self.events_page,
            "/polymarket/gamma/series": self.series,
            "/polymarket/clob/prices-history": self.prices_history,
            "/polymarket/data/trades": self.trades,
        }

    @cached_property
    def _by_condition(self) -> dict[str, Market]:
        return {m.condition_id or "": m for m in self.world.markets(Platform.POLYMARKET)}

    @cached_property
    def _by_token(self) -> dict[str, tuple[Market, int]]:
        return {o.id: (m, j) for m in self.world.markets(Platform.POLYMARKET) for j, o in enumerate(m.outcomes)}

    @cached_property
    def _series(self) -> dict[str, Series]:
        return {s.id: s for s in self.world.series(Platform.POLYMARKET)}

    # -- Gamma ---------------------------------------------------------------------------------------

    def markets(self, params: Params) -> list[Record]:
        markets = [m for m in self.world.markets(Platform.POLYMARKET) if self._market_matches(m, params)]
        return [self.market(m) for m in _gamma_page(markets, params)]

    def events(self, params: Params) -> list[Record]:
        return [self.event(e, nested=True) for e in _gamma_page(self._events(params), params)]

    def events_page(self, params: Params) -> Record:
        """`/events/pagination`: the page wrapped with whether more follow and how many match."""
        events = self._events(params)
        page = [self.event(e, nested=True) for e in _gamma_page(events, params)]
        more = (params.integer("offset", 0, _bad_number) or 0) + len(page) < len(events)
        return {"data": page, "pagination": {"hasMore": more, "totalResults": len(events)}}

    def _events(self, params: Params) -> list[Event]:
        return [e for e in self.world.events(Platform.POLYMARKET) if self._event_matches(e, params)]

    def series(self, params: Params) -> list[Record]:
        ids, slugs = set(params.all("id")), set(params.all("slug"))
        chosen = [
            s
            for s in self.world.series(Platform.POLYMARKET)
            if (not ids or s.id in ids) and (not slugs or s.slug in slugs)
        ]
        return [self.series_record(s) for s in _gamma_page(chosen, params)]

    def _market_matches(self, market: Market, params: Params) -> bool:
        closed = market.status in _CLOSED
        return (
            _wanted(params.all("id"), market.id)
            and _wanted(params.all("slug"), market.slug)
            and _wanted(params.all("condition_ids"), market.condition_id or "")
            and params.flag("closed") in (None, closed)
            and params.flag("active") in (None, True)
            and _within(params, "end_date", market.trading_end)
            and _within(params, "start_date", market.trading_start)
        )

    def _event_matches(self, event: Event, params: Params) -> bool:
        closed = all(m.status in _CLOSED for m in self.world.event_markets(event))
        return (
            _wanted(params.all("id"), event.id)
            and _wanted(params.all("slug"), event.slug)
            and params.flag("closed") in (None, closed)
            and params.flag("active") in (None, True)
            and _within(params, "end_date", event.end)
            and _within(params, "start_date", event.start)
        )

    def _book(self, market: Market, meta: Record) -> Record:
        """The first outcome's best bid and ask; a cancelled market's book, or that of a market that never traded,
        is dead, as Gamma writes one: `bestBid` 0, `bestAsk` 1 (no orders on either side), a spread of 1."""
        if market.status == MarketStatus.CANCELLED or not len(self.world.activity(market).ts):
            return {"bestBid": 0, "bestAsk": 1, "spread": 1}
        return {"bestBid": meta["bestBid"], "bestAsk": meta["bestAsk"], "spread": meta["spread"]}

    def market(self, market: Market, parent: Record | None = None) -> Record:
        """A Gamma market; `/markets` nests its parent event (without markets) as `events[0]`."""
        record = self.world.market_record(market)
        status = market.status
        names = [o.name for o in market.outcomes]
        meta = record["metadata"]
        closed = status in _CLOSED
        gamma: Record = {
            "id": market.id,
            "question": market.title,
            "conditionId": market.condition_id,
            "questionID": "0x" + (market.condition_id or "")[2:][::-1],
            "slug": market.slug,
            "resolutionSource": record["resolution_source"],
            "description": market.description,
            "category": market.category,
            "image": record["image_url"],
            "icon": record["image_url"],
            "startDate": iso(market.trading_start),
            "endDate": iso(market.trading_end),
            "startDateIso": market.trading_start.date().isoformat(),
            "endDateIso": market.trading_end.date().isoformat(),
            "createdAt": iso(market.created_at),
            "updatedAt": iso(self.world.as_of),
            "outcomes": _json_strings(names),
            "outcomePrices": _json_strings(self._outcome_prices(market, record)),
            "clobTokenIds": _json_strings([o.id for o in market.outcomes]),
            "marketType": "scalar" if market.market_type == MarketType.SCALAR else "normal",
            "volume": str(record["volume_total"]),
            "volumeNum": record["volume_total"],
            "volumeClob": record["volume_total"],
            **_unless_zero("volume24hr", record["volume_24h"]),
            **_unless_zero("volume1wk", record["volume_7d"]),
            "liquidity": str(record["liquidity"]),
            "liquidityNum": record["liquidity"],
            "liquidityClob": record["liquidity"],
            "active": True,
            "closed": closed,
            "archived": False,
            "acceptingOrders": status == MarketStatus.OPEN,
            "enableOrderBook": True,
            "negRisk": market.market_type == MarketType.CATEGORICAL,
            "orderPriceMinTickSize": market.tick,
            "orderMinSize": 5,
            "competitive": meta["competitive"],
            **self._book(market, meta),
            "lastTradePrice": record["current_prices"][market.outcomes[0].id]["price"],
        }
        if closed and not _legacy(market):
            gamma["umaResolutionStatus"] = "resolved"
        if closed:
            gamma["closedTime"] = _closed_time(market.live_until(self.world.as_of))  # trading stopped: closed
        gamma.update(self._grouping(market), **_fees(market))
        if market.market_type == MarketType.SCALAR:
            gamma["lowerBound"], gamma["upperBound"] = _SCALAR_BOUNDS
        gamma["events"] = [parent or self.event(self.world.find_event(market.event_id, Platform.POLYMARKET))]
        return gamma

    def _grouping(self, market: Market) -> Record:
        """A leg of a multi-market event is labelled (`groupItemTitle`: its own title, "" when alone); a leg of a
        negative-risk event names the group."""
        siblings = self.world.event_markets(self.world.find_event(market.event_id, Platform.POLYMARKET))
        grouping: Record = {"groupItemTitle": market.title if len(siblings) > 1 else ""}
        if market.market_type == MarketType.CATEGORICAL:
            grouping["negRiskMarketID"] = "0x" + hashlib.sha256(market.event_id.encode()).hexdigest()
        return grouping

    def _outcome_prices(self, market: Market, record: Record) -> list[str]:
        """The final prices say how a closed market ended: the winner 1, or 50-50 when it was cancelled, a
        scalar's fraction (its last price), or nothing on a legacy market (placeholders)."""
        if market.status == MarketStatus.CANCELLED:
            return [repr(1 / len(market.outcomes))] * len(market.outcomes)
        if _legacy(market):
            return ["0"] * len(market.outcomes)
        if market.status == MarketStatus.RESOLVED and market.market_type == MarketType.SCALAR:
            long = round(float(self.world.activity(market).last_prices()[0]), 4)
            return [repr(long), repr(round(1 - long, 4))]
        return [repr(record["current_prices"][o.id]["price"]) for o in market.outcomes]

    def event(self, event: Event | None, nested: bool = False) -> Record:
        """A Gamma event with its series (and, from `/events`, its markets)."""
        assert event is not None, "a sandbox market always has its event"
        record = self.world.event_record(event)
        markets = self.world.event_markets(event)
        gamma: Record = {
            "id": event.id,
            "ticker": event.slug,
            "slug": event.slug,
            "title": event.title,
            "description": event.description,
            "resolutionSource": record["resolution_source_url"],
            "startDate": iso(event.start),
            "endDate": iso(event.end),
            "createdAt": iso(event.start),
            "updatedAt": iso(self.world.as_of),
            "image": record["image_url"],
            "icon": record["image_url"],
            "active": True,
            "closed": all(m.status in _CLOSED for m in markets),
            "archived": False,
            "volume": record["total_volume"],
            "negRisk": any(m.market_type == MarketType.CATEGORICAL for m in markets),
            "category": event.category,
            "tags": _tags(self._series[event.series_id]),
            "series": [self._series_summary(self._series[event.series_id])],
        }
        if nested:
            parent = dict(gamma)
            gamma["markets"] = [self.market(m, parent) for m in markets]
        return gamma

    def series_record(self, series: Series) -> Record:
        """A Gamma series with its events listed (not their markets)."""
        gamma = self._series_summary(series)
        gamma["tags"] = _tags(series)
        gamma["events"] = [
            {"id": e.id, "slug": e.slug, "title": e.title, "startDate": iso(e.start), "endDate": iso(e.end)}
            for e in self.world.series_events(series)
        ]
        return gamma

    def _series_summary(self, series: Series) -> Record:
        record = self.world.series_record(series)
        return {
            "id": series.id,
            "ticker": series.slug,
            "slug": series.slug,
            "title": series.title,
            "description": series.description,
            "image": record["image_url"],
            "icon": record["image_url"],
            "active": True,
            "closed": False,
            "volume": record["total_volume"],
        }

    # -- CLOB and Data API ---------------------------------------------------------------------------

    def prices_history(self, params: Params) -> Record:
        """One token's price path: a point per `fidelity` minutes, at the period's start, priced at its close
        (the same close the unified price history gives for that period)."""
        token = params.text("market")
        found = self._by_token.get(token or "")
        if found is None:
            raise polymarket_error(400, f"invalid market: {token!r} is not a known token id")
        market, outcome = found
        as_of = int(self.world.as_of.timestamp())
        end = params.integer("endTs", as_of, _bad_number) or as_of
        start = params.integer("startTs", end - 86_400, _bad_number) or 0
        fidelity = params.integer("fidelity", 1, _bad_number) or 1
        starts, ohlc = period_ohlc(self.world.activity(market), outcome, start, end, fidelity)
        closes = np.round(ohlc[:, 3], 4) if len(starts) else np.empty(0)
        return {"history": [{"t": t, "p": p} for t, p in zip(starts.tolist(), closes.tolist(), strict=True)]}

    def trades(self, params: Params) -> list[Record]:
        """Data API trades of one market (by condition id), newest first, paged by offset up to the cap."""
        condition = params.text("market")
        market = self._by_condition.get(condition or "")
        if market is None:
            raise polymarket_error(400, f"invalid market: {condition!r} is not a known condition id")
        offset = params.integer("offset", 0, _bad_number) or 0
        if offset > DATA_API_MAX_OFFSET:
            raise polymarket_error(400, f"max historical activity offset of {DATA_API_MAX_OFFSET} exceeded")
        limit = min(params.integer("limit", DATA_API_DEFAULT_LIMIT, _bad_number) or 1, DATA_API_MAX_LIMIT)
        taker_only = params.flag("takerOnly") is not False  # the Data API's default is takerOnly=true
        event = self.world.find_event(market.event_id, Platform.POLYMARKET)
        event_slug = event.slug if event else ""
        records = self.world.trade_records(market, offset, limit, taker_only)
        return [_data_api_trade(market, event_slug, r) for r in records]


def _legacy(market: Market) -> bool:
    return (market.status == MarketStatus.RESOLVED and market.market_type == MarketType.BINARY
            and int(market.id) % _LEGACY_EVERY == 0)


def _fees(market: Market) -> Record:
    if not market.fee_rate:
        return {}
    schedule = {"exponent": 1, "rate": market.fee_rate, "rebateRate": 0.25, "takerOnly": True}
    return {"feesEnabled": True, "feeSchedule": schedule, "feeType": "sandbox_fees"}


def _unless_zero(name: str, value: float) -> Record:
    """Gamma leaves a zero volume out."""
    return {name: value} if value else {}


def _data_api_trade(market: Market, event_slug: str, record: Record) -> Record:
    user, meta = record["user"], record["metadata"]
    if user["name"].endswith("0"):  # an anonymous trader: a wallet without a profile
        user = {"name": "", "pseudonym": "", "profile_image": ""}
    return {
        "proxyWallet": record["user"]["name"],
        "side": record["side"].upper(),
        "asset": meta["asset"],
        "conditionId": meta["condition_id"],
        "size": record["size"],
        "price": record["price"],
        "timestamp": record["timestamp"],
        "title": market.title,
        "slug": market.slug,
        "icon": f"{_IMAGES}/markets/{market.slug}.png",
        "eventSlug": event_slug,
        "outcome": record["outcome"],
        "outcomeIndex": meta["outcome_index"],
        "name": user["name"],
        "pseudonym": user["pseudonym"],
        "bio": "",
        "profileImage": user["profile_image"],
        "profileImageOptimized": user["profile_image"],
        "transactionHash": record["transaction_hash"],
    }


def _tags(series: Series) -> list[Record]:
    return [
        {"id": str(i + 1), "label": tag, "slug": tag.lower().replace(" ", "-")} for i, tag in enumerate(series.tags)
    ]


def _wanted(values: list[str], value: str) -> bool:
    return not values or value in values


def _within(params: Params, name: str, moment: datetime) -> bool:
    """Gamma's `{name}_min` / `{name}_max` filters (inclusive)."""
    low, high = params.text(f"{name}_min"), params.text(f"{name}_max")
    try:
        return (low is None or moment >= parse_time(low)) and (high is None or moment <= parse_time(high))
    except ValueError:
        raise polymarket_error(422, f"invalid {name}_min/{name}_max: not an ISO-8601 date") from None


def _gamma_page(items: list[_T], params: Params) -> list[_T]:
    offset = params.integer("offset", 0, _bad_number) or 0
    limit = params.integer("limit", GAMMA_DEFAULT_LIMIT, _bad_number)
    if offset < 0 or offset > GAMMA_MAX_OFFSET:
        raise polymarket_error(422, f"offset {offset} is out of range (0..{GAMMA_MAX_OFFSET}); use /markets/keyset")
    limit = GAMMA_DEFAULT_LIMIT if limit is None or limit < 1 else min(limit, GAMMA_MAX_LIMIT)
    return items[offset : offset + limit]
