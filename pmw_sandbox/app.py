"""The sandbox's unified API: routing, authentication, validation, pagination, rate limit and faults.

`SandboxApp.handle` is a plain function from a request (method, path, query, headers) to a response
(status, headers, body bytes), so the same app runs in-process as an httpx transport (transport.py) and
behind a loopback HTTP server (server.py).
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cached_property
from typing import Any
from urllib.parse import urlencode

import numpy as np
import orjson

from pipeline.engine.schema import (
    LOWEST_DOCUMENTED_LIMIT,
    MARKET_PLATFORMS,
    MAX_LIMIT,
    MAX_PRICE_HISTORY_MARKETS,
    ORDERBOOK_PLATFORMS,
    PRICE_HISTORY_INTERVALS,
    SPORTS_PLATFORMS,
    League,
    MarketStatus,
    Platform,
)
from pmw_sandbox import orderbooks, profiles, stale
from pmw_sandbox.catalogue import Market, WorldConfig
from pmw_sandbox.cursors import CursorBook, CursorError
from pmw_sandbox.faults import Faults
from pmw_sandbox.native import NativeApi, is_native
from pmw_sandbox.readings import Readings
from pmw_sandbox.sports import Question, SportsWorld
from pmw_sandbox.world import Record, iso, shared_world

API_VERSION = "2.0.0"
DEFAULT_API_KEYS: tuple[str, ...] = ("sandbox-key", "sandbox-key-2")
STRICT_RATE_LIMIT_PER_MIN = 100
# Under the `page_overlap` reading, each next page starts with this many items of the page before.
PAGE_OVERLAP = 2
# Under the `trades_order=recorded` reading, the last trade before each midnight is recorded this late.
RECORDED_LATE_S = 1_800
# The list endpoints, answered 307 to their trailing-slash path under the `redirect` reading.
LISTS = frozenset({"/series", "/events", "/markets", "/trades", "/price-history", "/profile/trades", "/list-futures",
                   "/list-awards"})
DEFAULT_PAGE_SIZE = {"series": 25, "events": 25, "markets": 25, "trades": 100, "price_history": 5000,
                     "profile_trades": 50}


@dataclass(frozen=True)
class SandboxConfig:
    world: WorldConfig = field(default_factory=WorldConfig)
    api_keys: tuple[str, ...] = DEFAULT_API_KEYS
    rate_limit_per_min: int | None = None  # None: no budget; strict mode: 100
    rate_window_s: float = 60.0  # the window that rate_limit_per_min counts in: a minute (tests shorten it)
    cursor_ttl_s: float = 300.0
    faults: Faults = field(default_factory=Faults)
    readings: Readings = field(default_factory=Readings)

    @classmethod
    def strict(cls, **kwargs: Any) -> SandboxConfig:
        return cls(rate_limit_per_min=STRICT_RATE_LIMIT_PER_MIN, **kwargs)


@dataclass(frozen=True)
class SandboxResponse:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


class ApiError(Exception):
    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        headers: Mapping[str, str] | None = None,
        details: Record | None = None,
    ) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message
        self.headers = dict(headers or {})
        self.details = details


def _bad(parameter: str, message: str) -> ApiError:
    return ApiError(400, "VALIDATION_ERROR", f"invalid parameter '{parameter}': {message}")


class _Query:
    """Typed access to query parameters, raising 400 errors that name the parameter."""

    def __init__(self, items: Sequence[tuple[str, str]], refuse_over_limit: bool = False) -> None:
        self.items = list(items)  # repeated keys kept, for the native routes
        self.values: dict[str, str] = dict(items)
        self.refuse_over_limit = refuse_over_limit

    def text(self, name: str) -> str | None:
        value = self.values.get(name)
        return value if value not in (None, "") else None

    def flag(self, name: str) -> bool:
        value = self.text(name)
        if value is None:
            return False
        if value not in ("true", "false"):
            raise _bad(name, f"expected true or false, got {value!r}")
        return value == "true"

    def integer(self, name: str) -> int | None:
        value = self.text(name)
        if value is None:
            return None
        try:
            return int(value)
        except ValueError:
            raise _bad(name, f"expected an integer, got {value!r}") from None

    def limit(self, resource: str) -> int:
        value = self.integer("limit")
        if value is None:
            return DEFAULT_PAGE_SIZE[resource]
        if value < 1:
            raise _bad("limit", f"must be at least 1, got {value}")
        if self.refuse_over_limit:
            maximum = LOWEST_DOCUMENTED_LIMIT.get(resource, MAX_LIMIT[resource])
            if value > maximum:
                raise _bad("limit", f"must be at most {maximum}, got {value}")
        return min(value, MAX_LIMIT[resource])

    def platform(self, allowed: Sequence[Platform], required: bool = False) -> Platform | None:
        value = self.text("platform")
        if value is None:
            if required:
                raise _bad("platform", f"is required; expected one of {', '.join(allowed)}")
            return None
        if value not in allowed:
            raise _bad("platform", f"expected one of {', '.join(allowed)} (one value per query), got {value!r}")
        return Platform(value)

    def filters(self) -> dict[str, str]:
        """What a cursor is bound to: every parameter except the cursor itself and the page size."""
        return {k: v for k, v in self.values.items() if k not in ("cursor", "limit")}


class _RateLimiter:
    """A sliding window (a minute unless configured otherwise) of accepted requests per key."""

    def __init__(self, per_window: int, clock: Callable[[], float], window_s: float = 60.0) -> None:
        if window_s <= 0:
            raise ValueError(f"a rate window must be longer than 0 s, got {window_s}")
        self.per_window, self.window_s, self.clock = per_window, window_s, clock
        self.windows: dict[str, deque[float]] = {}

    def admit(self, key: str) -> float | None:
        """None if the request may go on, else the seconds until it could."""
        now = self.clock()
        window = self.windows.setdefault(key, deque())
        while window and now - window[0] >= self.window_s:
            window.popleft()
        if len(window) >= self.per_window:
            return self.window_s - (now - window[0])
        window.append(now)
        return None


class SandboxApp:
    """The unified API over a sandbox world."""

    def __init__(self, config: SandboxConfig | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.config = config or SandboxConfig()
        self.world = shared_world(self.config.world)
        self.native = NativeApi(self.world)
        self.sports = SportsWorld(self.config.world.seed)
        self.clock = clock
        self.cursors = CursorBook(f"sandbox-{self.config.world.seed}".encode(), self.config.cursor_ttl_s, clock)
        self.limiter = (
            _RateLimiter(self.config.rate_limit_per_min, clock, self.config.rate_window_s)
            if self.config.rate_limit_per_min
            else None
        )
        self.requests_served = 0
        self.rate_limited_answers = 0  # 429s sent because the budget was spent (not injected bursts)
        self._malformed_record_sent = False
        self._refused_listings: set[str] = set()  # listings whose first cursor was refused (cursor_refusal reading)
        self._dice = self.config.faults.roll(0)
        self.started = clock()
        # The moment of the world whose live answers (orderbooks, traders' profiles and trades) are served (None:
        # the world's now, `as_of`): a test or the demo moves it to take snapshots at chosen times of the world.
        self.live_at: datetime | None = None
        self._lock = threading.Lock()
        self._routes: dict[str, Callable[[_Query], Record]] = {
            "/health": self._health,
            "/platforms": self._platforms,
            "/series": self._series,
            "/events": self._events,
            "/markets": self._markets,
            "/trades": self._trades,
            "/price-history": self._price_history,
            "/profile/info": self._profile_info,
            "/profile/trades": self._profile_trades,
            "/league-info": self._league_info,
            "/list-futures": lambda query: self._list_sports(query, "future"),
            "/list-awards": lambda query: self._list_sports(query, "award"),
        }
        self._ledgers: dict[tuple[Platform, datetime], profiles.Ledger] = {}

    # -- entry point -------------------------------------------------------------------------------

    def handle(
        self, method: str, path: str, query: Sequence[tuple[str, str]], headers: Mapping[str, str]
    ) -> SandboxResponse:
        faults = self.config.faults
        if faults.latency_ms:
            time.sleep(faults.latency_ms / 1000.0)
        if self.config.readings.redirect and path in LISTS:
            return _redirect(path, query, headers)
        with self._lock:
            try:
                refuse = self.config.readings.over_limit == "reject"
                return self._handle(method, path.rstrip("/") or "/", _Query(query, refuse), headers)
            except ApiError as error:
                return self._error(error)

    def _handle(self, method: str, path: str, query: _Query, headers: Mapping[str, str]) -> SandboxResponse:
        if method != "GET":
            raise ApiError(405, "METHOD_NOT_ALLOWED", f"method {method} is not allowed; every endpoint is GET")
        if is_native(path):  # the platforms' own APIs need no key, and the unified budget is not theirs
            status, body = self.native.handle(path, query.items)
            return SandboxResponse(status, {"content-type": "application/json"}, orjson.dumps(body))
        key = _header(headers, "x-api-key")
        if key is None:
            raise ApiError(401, "INVALID_API_KEY", "missing X-API-Key header")
        if key not in self.config.api_keys:
            raise ApiError(401, "INVALID_API_KEY", "the X-API-Key header does not carry a known key")
        if self.limiter is not None:
            wait = self.limiter.admit(key)
            if wait is not None:
                self.rate_limited_answers += 1
                raise _rate_limited(wait, self.limiter.per_window, self.limiter.window_s)
        number = self.requests_served
        self.requests_served += 1
        faults = self.config.faults
        if faults.in_429_burst(number):
            raise _rate_limited(1.0, self.config.rate_limit_per_min, self.config.rate_window_s)
        dice = self._dice = faults.roll(number)
        if faults.error_rate and dice.random() < faults.error_rate:
            if dice.random() < 0.5:
                raise ApiError(500, "INTERNAL_ERROR", "injected fault: internal error")
            raise ApiError(
                503,
                "PLATFORM_UNAVAILABLE",
                "injected fault: platform unavailable",
                headers={"Retry-After": "1"},
                details={"retry_after": 1},
            )
        body = self._route(path, query)
        if faults.unknown_fields:
            _add_unknown_fields(body)
        payload = _iso_times(_dumps(body), self.config.readings.iso_times)
        if faults.malformed_page_rate and dice.random() < faults.malformed_page_rate:
            payload = payload[: len(payload) // 2]
        return SandboxResponse(200, {"content-type": "application/json"}, payload)

    def _route(self, path: str, query: _Query) -> Record:
        handler = self._routes.get(path)
        if handler is not None:
            return handler(query)
        parts = path.strip("/").split("/")
        if len(parts) == 2 and parts[0] == "events":
            return self._event(parts[1], query)
        if len(parts) == 2 and parts[0] == "markets":
            return self._market(parts[1], query)
        if len(parts) == 3 and parts[0] == "markets" and parts[2] == "orderbook":
            return self._orderbook(parts[1], query)
        if len(parts) == 2 and parts[0] in ("futures", "awards"):
            return self._sports_detail(parts[0], parts[1])
        raise ApiError(404, "NOT_FOUND", f"no endpoint at {path}")

    def _error(self, error: ApiError) -> SandboxResponse:
        inner: Record = {
            "code": error.code,
            "message": error.message,
            "timestamp": datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        }
        if error.details is not None:
            inner["details"] = error.details
        headers = {"content-type": "application/json", **error.headers}
        return SandboxResponse(error.status, headers, _dumps({"error": inner}))

    # -- shared pieces -----------------------------------------------------------------------------

    def _list_meta(self, platforms: Sequence[Platform]) -> Record:
        return {
            "platforms_queried": [p.value for p in platforms],
            "request_time": 0,
            "cache_hit": False,
            "data_freshness": iso(self.world.as_of),
        }

    def _single_meta(self) -> Record:
        return {"request_time": 0, "cache_hit": False, "data_freshness": iso(self.world.as_of)}

    def _page(
        self, endpoint: str, resource: str, query: _Query, total: int, fetch: Callable[[int, int], list[Record]]
    ) -> tuple[list[Record], Record]:
        """One page of a cursor-paginated list: the items and the pagination object."""
        limit = query.limit(resource)
        filters = query.filters()
        readings = self.config.readings
        # Under `empty_pages`, an empty page (its items filtered out after paging) comes before each page of
        # items: its cursor holds the offset of the page it comes before, as -(offset + 1).
        offset = -1 if readings.empty_pages and total else 0
        token = query.text("cursor")
        if token is not None:
            offset = self._redeem(token, endpoint, filters)
        if offset < 0:
            following = -offset - 1
            pagination = {"total": total, "limit": limit, "has_more": True,
                          "next_cursor": self.cursors.issue(endpoint, filters, following)}
            return [], self._total_as_read(pagination)
        served = max(1, limit // 3) if readings.short_pages else limit
        items = fetch(offset, served)
        end = offset + len(items)
        has_more = end < total
        next_cursor = None
        if has_more:
            overlap = min(max(self.config.faults.duplicate_items, PAGE_OVERLAP * readings.page_overlap),
                          len(items) - 1)
            following = end - max(overlap, 0)
            next_cursor = self.cursors.issue(endpoint, filters, -following - 1 if readings.empty_pages else following)
        elif readings.cursor_on_last_page:
            next_cursor = self.cursors.issue(endpoint, filters, end)
        pagination: Record = {"total": total, "limit": limit, "has_more": has_more, "next_cursor": next_cursor}
        return items, self._total_as_read(pagination)

    def _redeem(self, token: str, endpoint: str, filters: Mapping[str, str]) -> int:
        """The offset a cursor stands for, or the reading's refusal: a cursor that has expired (under the
        `cursor_expiry_rate` fault, or, under a `cursor_refusal` reading other than the default, the first
        cursor of each listing, once), or one that is no cursor of this listing."""
        faults, refusal = self.config.faults, self.config.readings.cursor_refusal
        if faults.cursor_expiry_rate and self._dice.random() < faults.cursor_expiry_rate:
            self.cursors.expire(token)
        listing = self.cursors.filters_digest(endpoint, filters)
        if refusal != "invalid_cursor" and listing not in self._refused_listings:
            self._refused_listings.add(listing)
            self.cursors.expire(token)
        try:
            return self.cursors.redeem(token, endpoint, filters)
        except (CursorError, ValueError, KeyError) as error:
            message = str(error) if isinstance(error, CursorError) else "cursor is not a cursor this service issued"
            if refusal == "gone":
                raise ApiError(410, "GONE", f"the cursor is no longer valid: {message}") from None
            code = "INVALID_CURSOR" if refusal == "invalid_cursor" else "VALIDATION_ERROR"
            raise ApiError(400, code, f"invalid parameter 'cursor': {message}") from None

    def _total_as_read(self, pagination: Record) -> Record:
        """`pagination.total` as the reading gives it: the count, absent, or wrong."""
        readings = self.config.readings
        total = pagination["total"]
        if readings.pagination_total == "absent":
            del pagination["total"]
        elif readings.pagination_total == "wrong":  # too low: a total above the items would say some are lost
            pagination["total"] = total // 2
        return pagination

    @staticmethod
    def _search(items: list[Any], query: _Query) -> list[Any]:
        text = query.text("query")
        if text is None:
            return items
        needle = text.lower()
        return [item for item in items if needle in item.title.lower()]

    def _ordered(self, items: list[Any]) -> list[Any]:
        """A list in the reading's order: the catalogue's, or reversed."""
        return items[::-1] if self.config.readings.list_order == "reversed" else items

    def _single(self, key: str, record: Record) -> Record:
        """A single event or market in the reading's envelope."""
        if self.config.readings.single_envelope == "data":
            return {"data": record, "meta": self._single_meta()}
        pagination = {"total": 1, "limit": 1, "has_more": False, "next_cursor": None}
        return {"pagination": pagination, key: [record], "meta": self._single_meta()}

    def _platforms_of(self, query: _Query) -> list[Platform]:
        platform = query.platform(MARKET_PLATFORMS)
        return [platform] if platform else list(MARKET_PLATFORMS)

    def _asked_market(self, market_id: str, platform: Platform | None = None) -> Market | None:
        """The market a `market_id` parameter names: by its id or its platform_id (reading market_id_param=any),
        or by its platform_id alone (=platform: its id, where the two differ, names no market)."""
        market = self.world.find_market(market_id, platform)
        if market is not None and (self.config.readings.market_id_param == "any" or market.platform_id == market.id):
            return market
        return self.world.find_market_by_platform_id(market_id, platform)

    def _served(self, kind: str, record: Record) -> Record:
        """A series, event or market record (and those nested in it) as the readings `member_ids` and
        `price_keys` serve it."""
        readings = self.config.readings
        if readings.member_ids == "platform":
            platform = Platform(record["platform"])
            if kind in ("series", "events"):
                record["platform_id"] = self._member_platform_ids[(platform, record["id"])]
            for key in ("event_id", "series_id") if kind == "markets" else ("series_id",) if kind == "events" else ():
                if record.get(key) is not None:
                    record[key] = self._member_platform_ids[(platform, record[key])]
        if kind == "markets" and readings.price_keys == "name":
            names = {outcome["id"]: outcome["name"] for outcome in record["outcomes"]}
            for key in ("current_prices", "price_24h_changes", "price_7d_changes", "last_trades"):
                if record.get(key) is not None:
                    record[key] = {names[k]: value for k, value in record[key].items()}
        for nested in ("events", "markets"):
            for item in record.get(nested) or ():
                self._served(nested, item)
        return record

    @cached_property
    def _member_platform_ids(self) -> dict[tuple[Platform, str], str]:
        """Each series' and event's platform_id under member_ids=platform: Polymarket `{slug}-{id}`, Kalshi the
        ticker in lower case (as Kalshi's web addresses write it)."""
        members = [m for c in self.world.catalogues.values() for m in (*c.series, *c.events)]
        return {(m.platform, m.id): f"{m.slug}-{m.id}" if m.platform == Platform.POLYMARKET else m.id.lower()
                for m in members}

    # -- endpoints ---------------------------------------------------------------------------------

    def _health(self, _query: _Query) -> Record:
        down = sorted(self.config.faults.unavailable_platforms)
        return {
            "data": {
                "status": "degraded" if down else "healthy",
                "checks": [{"name": "sandbox-world", "status": "pass", "response_time_ms": 0},
                           *({"name": name, "status": "fail", "response_time_ms": 0} for name in down)],
                "uptime": round(self.clock() - self.started, 3),
                "version": API_VERSION,
                "timestamp": iso(self.world.as_of),
            },
            "meta": {"request_time": 0},
        }

    def _platforms(self, _query: _Query) -> Record:
        platforms = []
        down = self.config.faults.unavailable_platforms
        for p in ORDERBOOK_PLATFORMS:
            full, up = p in MARKET_PLATFORMS, p.value not in down
            platforms.append(
                {
                    "id": p.value,
                    "name": p.value.capitalize(),
                    "status": "available" if up else self.config.readings.unavailable_status,
                    "health": {"status": "pass" if up else "fail", "last_check": iso(self.world.as_of),
                               "response_time_ms": 0},
                    "endpoints": [
                        {"name": name, "available": up and (full or name == "orderbook")}
                        for name in ("series", "events", "markets", "orderbook", "trades", "price-history")
                    ],
                    "features": {"orderbook": True, "trades": full, "historical_data": full, "user_profiles": full},
                }
            )
        return {"platforms": platforms, "meta": {"request_time": 0, "total": len(platforms)}}

    def _series(self, query: _Query) -> Record:
        platforms = self._platforms_of(query)
        nested, raw = query.flag("include_nested"), query.flag("include_raw")
        series = self._ordered(self._search([s for p in platforms for s in self.world.series(p)], query))
        items, pagination = self._page(
            "/series",
            "series",
            query,
            len(series),
            lambda o, n: [self._served("series", self.world.series_record(s, nested=nested, raw=raw))
                          for s in series[o : o + n]],
        )
        return {"pagination": pagination, "series": items, "meta": self._list_meta(platforms)}

    def _events(self, query: _Query) -> Record:
        platforms = self._platforms_of(query)
        nested, raw = query.flag("with_nested_markets"), query.flag("include_raw")
        events = self._ordered(self._search([e for p in platforms for e in self.world.events(p)], query))
        items, pagination = self._page(
            "/events",
            "events",
            query,
            len(events),
            lambda o, n: [self._served("events", self.world.event_record(e, nested=nested, raw=raw))
                          for e in events[o : o + n]],
        )
        return {"pagination": pagination, "events": items, "meta": self._list_meta(platforms)}

    def _event(self, event_id: str, query: _Query) -> Record:
        platform = query.platform(MARKET_PLATFORMS)
        nested, raw = query.flag("with_nested_markets"), query.flag("include_raw")
        event = self.world.find_event(event_id, platform)
        if event is None:
            raise ApiError(404, "NOT_FOUND", f"event {event_id!r} not found")
        return self._single("events", self._served("events", self.world.event_record(event, nested=nested, raw=raw)))

    def _markets(self, query: _Query) -> Record:
        platforms = self._platforms_of(query)
        status = query.text("status")
        if status is not None and status not in MarketStatus.__members__.values():
            raise _bad("status", f"expected one of {', '.join(MarketStatus)}, got {status!r}")
        markets = [m for p in platforms for m in self.world.markets(p) if status is None or m.status == status]
        markets = self._ordered(self._search(markets, query))
        items, pagination = self._page(
            "/markets",
            "markets",
            query,
            len(markets),
            lambda o, n: [self._served("markets", self._listed_market(m)) for m in markets[o : o + n]],
        )
        meta = self._list_meta(platforms)
        if items:  # a listing is as fresh as its stalest record
            meta["data_freshness"] = min(item["last_synced_at"] for item in items)
        return {"pagination": pagination, "markets": items, "meta": meta}

    def _listed_market(self, market: Any) -> Record:
        """A market's record as the listing shows it: as of the world's end, or (reading stale_listing) as an
        earlier sync left it (pmw_sandbox.stale)."""
        seen = stale.listed(self.world.config, market) if self.config.readings.stale_listing else None
        if seen is None:
            return self.world.market_record(market)
        record = self.world.market_record(market, at=seen.synced)
        record["trading_end_at"] = record["resolution_date"] = iso(seen.trading_end)
        return record

    def _market(self, market_id: str, query: _Query) -> Record:
        platform = query.platform(MARKET_PLATFORMS)
        market = self.world.find_market(market_id, platform)
        if market is None:
            raise ApiError(404, "NOT_FOUND", f"market {market_id!r} not found")
        return self._single("markets", self._served("markets", self.world.market_record(market,
                                                                                      raw=query.flag("include_raw"))))

    def _orderbook(self, market_id: str, query: _Query) -> Record:
        """The market's book as the world stands at `live_at`; the platform, when not given, is the first
        whose market has the id."""
        asked = query.platform(ORDERBOOK_PLATFORMS)
        raw = query.flag("include_raw")
        at = self.live_at or self.world.as_of
        for platform in [asked] if asked else ORDERBOOK_PLATFORMS:
            market = self._asked_market(market_id, platform) if platform in MARKET_PLATFORMS else None
            if platform in MARKET_PLATFORMS and market is None:
                continue
            found = orderbooks.book(self.world, platform, market.id if market else market_id, at,
                                    crossed=self.config.faults.crossed_book,
                                    best_last=self.config.readings.book_order == "best_last")
            if found is not None:
                found["market_id"] = market_id
                if raw:
                    found["metadata"]["_raw"] = {"market": market_id}
                return {"data": found, "meta": {"request_time": 0}}
        raise ApiError(404, "NOT_FOUND", f"orderbook for market {market_id!r} not found")

    def _trader(self, query: _Query) -> tuple[Platform, int]:
        """The platform and trader a profile request names; 400 for a bad parameter, 404 for no such trader."""
        platform = query.platform(MARKET_PLATFORMS, required=True)
        assert platform is not None
        user = query.text("user")
        if user is None or len(user) > 100:
            raise _bad("user", "is required: a wallet address (polymarket) or a nickname (kalshi), 1 to 100 characters")
        index = profiles.trader_index(platform, user)
        if index is None:
            raise ApiError(404, "NOT_FOUND", f"user {user!r} not found on {platform.value}")
        return platform, index

    def _ledger(self, platform: Platform) -> tuple[datetime, profiles.Ledger]:
        """The platform's trades up to `live_at`, kept for the last few moments asked about."""
        at = self.live_at or self.world.as_of
        key = (platform, at)
        if key not in self._ledgers:
            if len(self._ledgers) >= 4:
                self._ledgers.pop(next(iter(self._ledgers)))
            self._ledgers[key] = profiles.Ledger.of(self.world, platform, int(at.timestamp()))
        return at, self._ledgers[key]

    def _profile_info(self, query: _Query) -> Record:
        """A trader's profile, with their metrics as of `live_at` when include_metrics=true."""
        with_metrics = query.flag("include_metrics")
        platform, index = self._trader(query)
        at, ledger = self._ledger(platform) if with_metrics else (self.live_at or self.world.as_of, None)
        data = profiles.profile(self.world, platform, index, at, ledger)
        meta = {"request_time": 0, "platform": platform.value, "data_freshness": iso(self.world.as_of)}
        return {"data": data, "meta": meta}

    def _profile_trades(self, query: _Query) -> Record:
        """A trader's trades up to `live_at`, newest first (oldest first under that reading of /trades)."""
        query.limit("profile_trades")
        platform, index = self._trader(query)
        rows = self._ledger(platform)[1].newest_first(index)
        if self.config.readings.trades_order != "newest_first":
            rows = rows[::-1]
        items, pagination = self._page(
            "/profile/trades", "profile_trades", query, len(rows),
            lambda o, n: [record for market, i in rows[o : o + n]
                          for record in self.world.trade_records_at(market, np.array([i]))],
        )
        meta = {"request_time": 0, "platform": platform.value, "data_freshness": iso(self.world.as_of)}
        return {self.config.readings.profile_trades_envelope: items, "pagination": pagination, "meta": meta}

    def _trades(self, query: _Query) -> Record:
        market_id = query.text("market_id")
        if market_id is None:
            raise _bad("market_id", "is required (a Polymarket numeric market id or a Kalshi ticker)")
        taker_only = query.flag("taker_only")
        query.limit("trades")  # parameters are validated before ids are looked up
        market = self._asked_market(market_id)
        if market is None:
            raise ApiError(404, "NOT_FOUND", f"market {market_id!r} not found")
        taker_only = taker_only and market.platform == Platform.POLYMARKET
        total = self.world.trade_count(market, taker_only)
        readings = self.config.readings
        recorded = self._recorded(market, taker_only) if readings.trades_order == "recorded" else None
        oldest_first = readings.trades_order == "oldest_first"
        items, pagination = self._page(
            "/trades", "trades", query, total,
            lambda o, n: (self.world.trade_records(market, o, n, taker_only, oldest_first) if recorded is None
                          else self.world.trade_records_at(market, recorded[o : o + n])),
        )
        _as_read(items, "market_id", market, readings.row_market_id)
        if readings.trade_taker == "absent":
            for item in items:
                item["taker"] = None
        if readings.trade_outcome == "id":
            names = {o.name: o.id for o in market.outcomes}
            for item in items:
                item["outcome"] = names[item["outcome"]]
        meta = {
            "request_time": 0,
            "market_id": market.id,
            "platform": market.platform.value,
            "data_freshness": iso(self.world.as_of),
        }
        if self.config.faults.malformed_record and items and not self._malformed_record_sent:
            self._malformed_record_sent = True
            broken = {**items[-1], "trade_id": f"{items[-1]['trade_id']}-malformed", "price": "not-a-price"}
            items.append(broken)
        return {"trades": items, "pagination": pagination, "meta": meta}

    def _recorded(self, market: Any, taker_only: bool) -> np.ndarray:
        """The positions of a market's trades oldest first in the order the server recorded them: the last trade
        before each midnight recorded RECORDED_LATE_S late, so that it comes after trades of the next day."""
        act = self.world.activity(market)
        positions = act.taker_newest_first[::-1] if taker_only else np.arange(len(act.ts))
        day = act.ts[positions] // 86_400
        last_of_day = np.append(day[1:] != day[:-1], False)
        recorded = act.ts[positions] + np.where(last_of_day, RECORDED_LATE_S, 0)
        return positions[np.argsort(recorded, kind="stable")]

    def _price_history(self, query: _Query) -> Record:
        ids_text = query.text("market_ids")
        if ids_text is None:
            raise _bad("market_ids", "is required (comma-separated market ids)")
        ids = [i.strip() for i in ids_text.split(",") if i.strip()]
        if len(ids) > MAX_PRICE_HISTORY_MARKETS:
            raise _bad("market_ids", f"at most {MAX_PRICE_HISTORY_MARKETS} ids per request, got {len(ids)}")
        interval = query.integer("interval") or 60
        if interval not in PRICE_HISTORY_INTERVALS:
            raise _bad(
                "interval", f"expected one of {', '.join(map(str, PRICE_HISTORY_INTERVALS))} minutes, got {interval}"
            )
        as_of = int(self.world.as_of.timestamp())
        end = query.integer("end_ts")
        end = as_of if end is None else end
        start = query.integer("start_ts")
        start = end - 86_400 if start is None else start
        if start > end:
            raise _bad("start_ts", f"start_ts ({start}) is after end_ts ({end})")
        limit = query.limit("price_history")
        markets = []
        for market_id in ids:
            market = self._asked_market(market_id)
            if market is None:
                raise ApiError(404, "NOT_FOUND", f"market {market_id!r} not found")
            markets.append(market)
        points = self._points(markets, start, end, interval)[:limit]
        meta = {
            "total_points": len(points),
            "platforms": sorted({m.platform.value for m in markets}),
            "time_range": self._time_range(points, start, end),
            "interval": str(interval),
            "request_time": 0,
            "cache_hit": False,
            "data_freshness": iso(self.world.as_of),
        }
        return {"data": points, "meta": meta}


    def _time_range(self, points: list[Record], start: int, end: int) -> Record:
        """`meta.time_range` as the reading gives it: the span asked, or the span of the points held."""
        if self.config.readings.price_time_range == "asked" or not points:
            return {"start": start, "end": end}
        times = [point["timestamp"] for point in points]
        return {"start": min(times), "end": max(times)}

    def _points(self, markets: list[Any], start: int, end: int, interval: int) -> list[Record]:
        """The markets' price points labelled within [start, end] (or, reading price_range=periods, of every period
        overlapping it), in the reading's order and labelling."""
        readings = self.config.readings
        shift = interval * 60 if readings.price_label == "period_end" else 0
        first, last = start - shift, end - shift  # the periods whose label lies within [start, end]
        if readings.price_range == "periods":
            first, last = start - start % (interval * 60), end
        ordered = markets[::-1] if readings.price_points_order == "by_market_reversed" else markets
        points: list[Record] = []
        for market in ordered:
            mine = self.world.price_points(market, first, last, interval)
            for point in mine:
                point["timestamp"] += shift
            _as_read(mine, "marketId", market, readings.row_market_id)
            points.extend(mine)
        if readings.price_points_order == "by_time":
            points.sort(key=lambda point: point["timestamp"])
        return points

    # -- sports ------------------------------------------------------------------------------------

    def _league(self, query: _Query, required: bool) -> League | None:
        value = query.text("league")
        if value is None:
            if required:
                raise _bad("league", f"is required; expected one of {', '.join(League)}")
            return None
        if value not in League.__members__.values():
            raise _bad("league", f"expected one of {', '.join(League)}, got {value!r}")
        return League(value)

    def _sports_meta(self, platforms: Sequence[Platform]) -> Record:
        return {"platforms_queried": [p.value for p in platforms], "request_time": 0,
                "data_freshness": iso(self.world.as_of), "platform_errors": {}}

    def _league_info(self, query: _Query) -> Record:
        """One league (`league=`), or, the sandbox's reading of "all leagues are returned", a list of them all."""
        league = self._league(query, required=False)
        teams = query.flag("include_teams")
        leagues = [league] if league is not None else list(League)
        records = [self.sports.league_record(one, teams) for one in leagues]
        if self.config.readings.list_order == "reversed":
            for record in records:
                record.get("teams", []).reverse()  # type: ignore[union-attr]
        return {"data": records[0] if league is not None else records, "meta": {"request_time": 0}}

    def _list_sports(self, query: _Query, kind: str) -> Record:
        league = self._league(query, required=True)
        platform = query.platform(SPORTS_PLATFORMS)
        wanted_type = query.text(f"{kind}_type")
        assert league is not None
        chosen = [q for q in self.sports.questions[league] if q.kind == kind
                  and (wanted_type is None or q.type == wanted_type) and (platform is None or platform in q.platforms)]
        items = [self.sports.list_item(q) for q in self._ordered(chosen)]
        platforms = [platform] if platform is not None else list(SPORTS_PLATFORMS)
        return {"data": {f"{kind}s": items}, "meta": self._sports_meta(platforms)}

    def _sports_detail(self, path: str, question_id: str) -> Record:
        """`/futures/{id}`: a future's detail, today's odds on every platform that lists it. `/awards/{id}` serves
        an award's in the same shape (reading award_detail=awards), or nothing, the award's detail being served at
        `/futures/{id}` (award_detail=futures)."""
        by_futures_path = self.config.readings.award_detail == "futures"
        kinds = {"futures": ("future", "award") if by_futures_path else ("future",),
                 "awards": () if by_futures_path else ("award",)}[path]
        question = next(filter(None, (self.sports.question(kind, question_id) for kind in kinds)), None)
        if question is None:
            raise ApiError(404, "NOT_FOUND", f"{path[:-1]} {question_id!r} not found")
        detail = self._as_read_detail(question)
        return {"data": detail, "meta": self._sports_meta([Platform(m["platform"]) for m in detail["markets"]])}

    def _as_read_detail(self, question: Question) -> Record:
        detail = self.sports.detail(question, self.world.config.end_day)
        readings = self.config.readings
        for market in detail["markets"]:
            if readings.list_order == "reversed":
                market["outcomes"].reverse()
            if readings.american_odds == "bare":
                for outcome in market["outcomes"]:
                    outcome["odds"]["american"] = outcome["odds"]["american"].removeprefix("+")
        if readings.list_order == "reversed":
            detail["markets"].reverse()
        return detail


def _as_read(records: list[Record], key: str, market: Any, reading: str) -> None:
    """Put the market id a reading puts on rows under `key`: the unified id (as built), the platform's, none."""
    if reading == "unified":
        return
    for record in records:
        if reading == "platform":
            record[key] = market.platform_id
        elif reading == "absent":
            del record[key]


def _iso_times(payload: bytes, reading: str) -> bytes:
    """ISO times (as built: `...T...:00Z`) written the reading's way: `Z`, `+00:00`, with fractional seconds, or
    with a lower-case `t` and `z` (RFC 3339, 5.6, allows them)."""
    if reading == "z":
        return payload
    replacement = {"offset": rb'"\1T\2+00:00"', "fractional": rb'"\1T\2.000Z"', "lowercase": rb'"\1t\2z"'}[reading]
    return _ISO_TIME.sub(replacement, payload)


_ISO_TIME = re.compile(rb'"(\d{4}-\d\d-\d\d)T(\d\d:\d\d:\d\d)Z"')


def _redirect(path: str, query: Sequence[tuple[str, str]], headers: Mapping[str, str]) -> SandboxResponse:
    """307 to the path with a trailing slash, the query kept: an absolute URL on the host asked (a relative one
    when the request names none)."""
    host = _header(headers, "host")
    location = (f"http://{host}" if host else "") + path + "/" + (f"?{urlencode(query)}" if query else "")
    return SandboxResponse(307, {"location": location, "content-type": "text/plain"}, b"")


def _header(headers: Mapping[str, str], name: str) -> str | None:
    for key, value in headers.items():
        if key.lower() == name:
            return value or None
    return None


def _rate_limited(wait_s: float, per_window: int | None, window_s: float = 60.0) -> ApiError:
    """A 429 whose Retry-After (whole seconds, at least 1) covers `wait_s`, the time until the window admits."""
    retry_after = max(1, int(wait_s + 0.999))
    per = "minute" if window_s == 60.0 else f"{window_s:g} s"
    budget = f" of {per_window} requests per {per}" if per_window else ""
    return ApiError(
        429,
        "RATE_LIMITED",
        f"rate limit{budget} exceeded; retry after {retry_after} s",
        headers={"Retry-After": str(retry_after)},
        details={"retry_after": retry_after},
    )


def _dumps(body: Record) -> bytes:
    return orjson.dumps(body)


def _add_unknown_fields(body: Record) -> None:
    body["x_sandbox_trace"] = "unknown envelope field"
    for value in body.values():
        records = value if isinstance(value, list) else [value] if isinstance(value, dict) else []
        for record in records:
            if isinstance(record, dict):
                record["x_sandbox_unknown"] = {"note": "a field the spec does not document"}
