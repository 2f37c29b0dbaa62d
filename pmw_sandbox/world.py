"""The sandbox world: the catalogue of both platforms, their simulated activity, and its unified-API records.

`World` answers the questions the HTTP app asks (which markets, which trades, which price points) and
renders them in the unified API's wire format (docs/api-contract.md, field names as in pipeline/engine/schema/).
Records are deterministic: the same config gives the same bytes.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from functools import cache, lru_cache
from typing import Any, TypeVar

import numpy as np

from pipeline.engine.schema import MARKET_PLATFORMS, MarketStatus, MarketType, Platform
from pmw_sandbox.activity import (
    SIDES,
    USERS_PER_PLATFORM,
    MarketActivity,
    period_ohlc,
    period_volume,
    simulate,
    size_through,
)
from pmw_sandbox.archive import Archive
from pmw_sandbox.catalogue import Catalogue, Event, Market, Series, WorldConfig
from pmw_sandbox.catalogue_builder import build_catalogue

Listed = TypeVar("Listed", Market, Event)  # what the world finds by an id: a market or an event

Record = dict[str, Any]
_ACTIVITY_CACHE_SIZE = 256
_SHARED_WORLDS = 8  # worlds kept by shared_world: tests and benchmarks use a handful
_ADJECTIVES = ("Quiet", "Bold", "Lucky", "Rapid", "Calm", "Sharp", "Wise", "Brave")
_ANIMALS = ("Otter", "Falcon", "Badger", "Heron", "Lynx", "Marten", "Ibis", "Walrus")


def shared_world(config: WorldConfig) -> World:
    """The world of `config`, built once per process: a world is deterministic and read-only (its caches aside),
    so the sandboxes of one config share it rather than each building the catalogue and simulating the
    markets again. A config without an end is the world ending yesterday, as of now."""
    return _world(replace(config, end=config.end_day))


@lru_cache(maxsize=_SHARED_WORLDS)
def _world(config: WorldConfig) -> World:
    return World(config)


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _money(x: float) -> float:
    return round(float(x), 2)


def _price(x: float) -> float:
    return round(float(x), 4)


class World:
    """A deterministic synthetic world of series, events, markets, trades and prices."""

    def __init__(self, config: WorldConfig | None = None) -> None:
        self.config = config or WorldConfig()
        self.as_of = self.config.as_of
        self.catalogues: dict[Platform, Catalogue] = {p: build_catalogue(self.config, p) for p in MARKET_PLATFORMS}
        self._markets = {(m.platform, m.id): m for c in self.catalogues.values() for m in c.markets}
        self._events = {(e.platform, e.id): e for c in self.catalogues.values() for e in c.events}
        self._by_platform_id = {(m.platform, m.platform_id): m for c in self.catalogues.values() for m in c.markets}
        self._activity: OrderedDict[tuple[Platform, str], MarketActivity] = OrderedDict()
        self._activity_lock = threading.Lock()  # apps on threaded servers share a world
        self._stats: dict[tuple[Platform, str, datetime | None], Record] = {}
        self.archive = Archive(self.config)  # the catalogue's past, listed by the unified API only

    # -- lookups (the unified API's view: multivariate markets and their events are hidden) ---------

    def series(self, platform: Platform) -> list[Series]:
        return [s for s in self.catalogues[platform].series if not s.multivariate]

    def events(self, platform: Platform) -> list[Event]:
        return [e for e in self.catalogues[platform].events if not e.multivariate]

    def markets(self, platform: Platform) -> list[Market]:
        return [m for m in self.catalogues[platform].markets if not m.multivariate]

    def all_markets(self, platform: Platform) -> list[Market]:
        """Every market of the platform, multivariate ones included (the platform's own view)."""
        return list(self.catalogues[platform].markets)

    def find_market(self, market_id: str, platform: Platform | None = None) -> Market | None:
        return _listed(self._markets, market_id, platform)

    def find_market_by_platform_id(self, platform_id: str, platform: Platform | None = None) -> Market | None:
        """The market whose platform_id (Polymarket's condition id, the Kalshi ticker) this is."""
        return _listed(self._by_platform_id, platform_id, platform)

    def find_event(self, event_id: str, platform: Platform | None = None) -> Event | None:
        return _listed(self._events, event_id, platform)

    def event_markets(self, event: Event) -> list[Market]:
        return [m for m in self.markets(event.platform) if m.event_id == event.id]

    def series_events(self, series: Series) -> list[Event]:
        return [e for e in self.events(series.platform) if e.series_id == series.id]

    # -- activity ----------------------------------------------------------------------------------

    def activity(self, market: Market) -> MarketActivity:
        key = (market.platform, market.id)
        with self._activity_lock:
            cached = self._activity.get(key)
            if cached is not None:
                self._activity.move_to_end(key)
                return cached
        activity = simulate(market, self.config.seed, self.config.window_start, self.as_of)
        with self._activity_lock:
            self._activity[key] = activity
            if len(self._activity) > _ACTIVITY_CACHE_SIZE:
                self._activity.popitem(last=False)
        return activity

    def _market_stats(self, market: Market, at: datetime | None = None) -> Record:
        """The market's figures as of `at` (the world's end when None): from the trades made before it."""
        key = (market.platform, market.id, at)
        if key not in self._stats:
            act = self.activity(market)
            as_of_s = int((at or self.as_of).timestamp())
            before = act.ts < as_of_s if at is not None else np.full(len(act.ts), True)  # at the end: every trade
            notional = np.where(act.taker & before, act.size * act.price, 0.0)  # a match counts once: its taker's
            last_trades: Record = {}
            for j, outcome in enumerate(market.outcomes):
                idx = np.flatnonzero((act.outcome == j) & before)
                if len(idx):
                    i = idx[-1]
                    last_trades[outcome.id] = {
                        "price": _price(act.price[i]),
                        "timestamp": iso(datetime.fromtimestamp(int(act.ts[i]), UTC)),
                        "size": _money(act.size[i]),
                    }
            self._stats[key] = {
                "volume_24h": _money(notional[act.ts >= as_of_s - 86_400].sum()),
                "volume_7d": _money(notional[act.ts >= as_of_s - 7 * 86_400].sum()),
                "volume_total": _money(notional.sum()),
                "unique_traders": len(np.unique(act.user[before])),
                "open_interest": _money(act.size[act.taker & before].sum() * 0.35),
                "last_trades": last_trades or None,
                "last_prices": (act.last_prices() if at is None else act.price_at(as_of_s)).copy(),
                "day_ago": act.price_at(as_of_s - 86_400).copy(),
                "week_ago": act.price_at(as_of_s - 7 * 86_400).copy(),
            }
        return self._stats[key]

    # -- records -----------------------------------------------------------------------------------

    def series_record(self, series: Series, nested: bool = False, raw: bool = False) -> Record:
        events = self.series_events(series)
        markets = [m for e in events for m in self.event_markets(e)]
        record: Record = {
            "id": series.id,
            "platform": series.platform.value,
            "platform_id": series.id,
            "title": series.title,
            "last_synced_at": iso(self.as_of),
            "slug": series.slug,
            "description": series.description,
            "image_url": f"https://images.sandbox.invalid/series/{series.slug}.png",
            "category": series.category,
            "tags": list(series.tags),
            "event_count": len(events),
            "market_count": len(markets),
            "total_volume": _money(sum(self._market_stats(m)["volume_total"] for m in markets)),
        }
        if nested:
            record["events"] = [self.event_record(e) for e in events]
        if raw:
            record["_raw"] = {"ticker" if series.platform == Platform.KALSHI else "slug": series.slug}
        return record

    def event_record(self, event: Event, nested: bool = False, raw: bool = False) -> Record:
        markets = self.event_markets(event)
        record: Record = {
            "id": event.id,
            "platform": event.platform.value,
            "platform_id": event.id,
            "title": event.title,
            "last_synced_at": iso(self.as_of),
            "series_id": event.series_id,
            "slug": event.slug,
            "description": event.description,
            "image_url": f"https://images.sandbox.invalid/events/{event.slug}.png",
            "resolution_source_url": f"https://resolution.sandbox.invalid/{event.series_id.lower()}",
            "event_start_at": iso(event.start),
            "event_end_at": iso(event.end),
            "market_count": len(markets),
            "total_volume": _money(sum(self._market_stats(m)["volume_total"] for m in markets)),
        }
        if nested:
            record["markets"] = [self.market_record(m) for m in markets]
        if raw:
            record["_raw"] = {"event_ticker" if event.platform == Platform.KALSHI else "id": event.id}
        return record

    def current_prices(self, market: Market, at: datetime | None = None) -> Record:
        last = self._market_stats(market, at)["last_prices"]
        if self._status(market, at) == MarketStatus.RESOLVED:
            winner = int(np.argmax(last))
            return {o.id: {"price": 1.0 if j == winner else 0.0} for j, o in enumerate(market.outcomes)}
        return {
            o.id: {
                "price": _price(last[j]),
                "bid": _price(max(last[j] - market.tick, 0.0)),
                "ask": _price(min(last[j] + market.tick, 1.0)),
            }
            for j, o in enumerate(market.outcomes)
        }

    @staticmethod
    def _status(market: Market, at: datetime | None) -> MarketStatus:
        """The market's status as of `at` (the world's end when None): open until it was halted or resolved."""
        halted = market.resolved_at or market.stopped_at
        return MarketStatus.OPEN if at is not None and halted is not None and halted > at else market.status

    def market_record(self, market: Market, raw: bool = False, at: datetime | None = None) -> Record:
        """The market's record as synced at the world's end, or as an earlier sync at `at` saw it."""
        stats = self._market_stats(market, at)
        event = self._events[(market.platform, market.event_id)]
        prices = self.current_prices(market, at)
        status = self._status(market, at)
        first = prices[market.outcomes[0].id]
        best_bid, best_ask = first.get("bid", first["price"]), first.get("ask", first["price"])
        last = stats["last_prices"]
        is_polymarket = market.platform == Platform.POLYMARKET
        rng = np.random.default_rng([self.config.seed, market.index, 99, 1 if is_polymarket else 2])
        liquidity = _money(rng.lognormal(9.0, 1.0))
        record: Record = {
            "id": market.id,
            "platform": market.platform.value,
            "platform_id": market.platform_id,
            "event_id": market.event_id,
            "event_name": event.title,
            "event_slug": event.slug if is_polymarket else None,
            "series_id": market.series_id,
            "slug": market.slug,
            "market_slug": market.slug,
            "title": market.title,
            "description": market.description,
            "category": market.category,
            "subcategory": market.subcategory,
            "tags": list(market.tags),
            "status": status.value,
            "market_type": market.market_type.value,
            "outcomes": [{"id": o.id, "name": o.name} for o in market.outcomes],
            "current_prices": prices,
            "volume_24h": stats["volume_24h"],
            "volume_7d": stats["volume_7d"],
            "volume_total": stats["volume_total"],
            "liquidity": liquidity,
            "liquidity_score": round(float(np.log10(1 + liquidity)) / 6, 4),
            "open_interest": stats["open_interest"],
            "unique_traders": stats["unique_traders"],
            "fee_rate": market.fee_rate,
            "trading_fee": market.fee_rate,
            "withdrawal_fee": 0.0,
            "source_url": (
                f"https://polymarket.com/event/{event.slug}"
                if is_polymarket
                else f"https://kalshi.com/markets/{market.series_id.lower()}/{market.id.lower()}"
            ),
            "image_url": f"https://images.sandbox.invalid/markets/{market.slug}.png",
            "created_at": iso(market.created_at),
            "trading_start_at": iso(market.trading_start),
            "trading_end_at": iso(market.trading_end),
            "resolution_date": iso(market.trading_end),
            "resolved_at": iso(market.resolved_at) if market.resolved_at and status == market.status else None,
            "resolution_criteria": f"Resolves per the {market.series_id} rules.",
            "resolution_source": "https://resolution.sandbox.invalid/",
            "price_24h_changes": {o.id: _price(last[j] - stats["day_ago"][j]) for j, o in enumerate(market.outcomes)},
            "price_7d_changes": {o.id: _price(last[j] - stats["week_ago"][j]) for j, o in enumerate(market.outcomes)},
            "last_trades": stats["last_trades"],
            "metadata": {
                "conditionId": market.condition_id,
                "ammType": None,
                "marketType": "negRisk" if market.market_type == MarketType.CATEGORICAL else "normal",
                "formatType": market.market_type.value,
                "competitive": round(float(rng.uniform(0.5, 1.0)), 4),
                "score": round(float(rng.uniform(0.0, 100.0)), 2),
                "bestBid": best_bid,
                "bestAsk": best_ask,
                "spread": _price(best_ask - best_bid),
                "clobTokenIds": [o.id for o in market.outcomes] if is_polymarket else None,
            },
            "last_synced_at": iso(at or self.as_of),
        }
        if raw:
            record["_raw"] = {"ticker" if not is_polymarket else "conditionId": market.platform_id}
        return record

    def trade_count(self, market: Market, taker_only: bool = False) -> int:
        act = self.activity(market)
        return int(act.taker.sum()) if taker_only else len(act.ts)

    def trade_records(
        self, market: Market, offset: int, limit: int, taker_only: bool = False, oldest_first: bool = False
    ) -> list[Record]:
        """Trades of a market, newest first (or oldest first), from position `offset` of that order."""
        act = self.activity(market)
        if taker_only:
            order = act.taker_newest_first[::-1] if oldest_first else act.taker_newest_first
            chosen = order[offset : offset + limit]
        elif oldest_first:
            chosen = np.arange(offset, min(offset + limit, len(act.ts)))
        else:
            newest = len(act.ts) - 1 - offset
            chosen = np.arange(newest, max(newest - limit, -1), -1)
        return self.trade_records_at(market, chosen)

    def trade_records_at(self, market: Market, chosen: np.ndarray) -> list[Record]:
        """The market's trades at these positions of its activity, in that order."""
        act = self.activity(market)
        is_polymarket = market.platform == Platform.POLYMARKET
        users = _users(market.platform)
        outcomes = market.outcomes
        prefix = f"{self.config.seed}:{market.platform}:{market.id}:"
        platform = market.platform.value
        records = []
        columns = zip(
            chosen.tolist(),
            act.ts[chosen].tolist(),
            act.outcome[chosen].tolist(),
            act.side[chosen].tolist(),
            np.round(act.price[chosen], 4).tolist(),
            np.round(act.size[chosen], 2).tolist(),
            act.taker[chosen].tolist(),
            act.user[chosen].tolist(),
            act.match[chosen].tolist(),
            strict=True,
        )
        for i, ts, outcome_index, side, price, size, taker, user, match in columns:
            digest = hashlib.blake2b(f"{prefix}{match}".encode(), digest_size=32).hexdigest()  # the match's
            outcome = outcomes[outcome_index]
            if is_polymarket:
                trade_id = f"0x{digest}-{i - match}"  # the transaction, and the row's place in its match
                metadata: Record = {
                    "asset": outcome.id,
                    "outcome_index": outcome_index,
                    "condition_id": market.condition_id,
                }
            else:
                trade_id = f"{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}"
                metadata = {"count": int(size), "taker_side": outcome.id}
            records.append(
                {
                    "trade_id": trade_id,
                    "market_id": market.id,
                    "platform": platform,
                    "side": SIDES[side],
                    "price": price,
                    "size": size,
                    "timestamp": ts,
                    "outcome": outcome.name,
                    "taker": taker,
                    "transaction_hash": f"0x{digest}" if is_polymarket else "",
                    "user": users[user],
                    "metadata": metadata,
                }
            )
        return records

    def price_points(self, market: Market, start_s: int, end_s: int, interval_min: int) -> list[Record]:
        """Price-history points of every outcome of a market, labelled by period start."""
        act = self.activity(market)
        is_polymarket = market.platform == Platform.POLYMARKET
        half_spread = market.tick
        points: list[Record] = []
        for j, outcome in enumerate(market.outcomes):
            starts, ohlc = period_ohlc(act, j, start_s, end_s, interval_min)
            if len(starts) == 0:
                continue
            if is_polymarket:  # Polymarket points carry the close only; the others equal it.
                ohlc = np.repeat(ohlc[:, 3:4], 4, axis=1)
            volume = period_volume(act, j, starts, interval_min)
            open_interest = size_through(act, j, starts, interval_min) * 0.35  # whatever span is asked
            # Each point's prices: (o, h, l, c) as they are, less and plus the half spread clamped to [0, 1], each
            # rounded as _price rounds; columns computed at once, rounded value by value (Python's rounding).
            columns = [ohlc, np.clip(ohlc - half_spread, 0.0, 1.0), np.clip(ohlc + half_spread, 0.0, 1.0)]
            price, bid, ask = ([[round(v, 4) for v in row] for row in frame.tolist()] for frame in columns)
            for k, t in enumerate(starts.tolist()):
                points.append(
                    {
                        "timestamp": t,
                        "price": _named_ohlc(price[k]),
                        "platform": market.platform.value,
                        "marketId": market.id,
                        "volume": _money(volume[k]),
                        "openInterest": _money(open_interest[k]),
                        "bidAsk": {"bid": _named_ohlc(bid[k]), "ask": _named_ohlc(ask[k])},
                        "outcomeId": outcome.id,
                    }
                )
        return points

    def days(self) -> list[Any]:
        return [self.config.start_day + timedelta(days=i) for i in range(self.config.days)]


def users(platform: Platform) -> tuple[Record, ...]:
    """The platform's traders, as trade records show them: `name` is a wallet address on Polymarket, a nickname
    on Kalshi."""
    return _users(platform)


@cache
def _users(platform: Platform) -> tuple[Record, ...]:
    """The platform's traders, as trade records show them."""
    return tuple(
        {
            "name": f"0x{hashlib.blake2b(f'user{u}'.encode(), digest_size=20).hexdigest()}"
            if platform == Platform.POLYMARKET
            else f"trader{u}",
            "pseudonym": f"{_ADJECTIVES[u % 8]}-{_ANIMALS[(u // 8) % 8]}",
            "profile_image": f"https://images.sandbox.invalid/users/{u}.png",
        }
        for u in range(USERS_PER_PLATFORM)
    )


def _named_ohlc(row: list[float]) -> Record:
    o, h, lo, c = row
    return {"close": c, "open": o, "high": h, "low": lo}


def _listed(index: Mapping[tuple[Platform, str], Listed], key: str, platform: Platform | None) -> Listed | None:
    """The market or event indexed under `key` on the platform (or on any market platform), unless it is
    multivariate: those are filtered out of the unified API's results."""
    for p in [platform] if platform else MARKET_PLATFORMS:
        found = index.get((p, key))
        if found is not None and not found.multivariate:
            return found
    return None
