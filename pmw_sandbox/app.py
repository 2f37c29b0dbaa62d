"""The sandbox's APIs as one app: it checks a request (method, key, rate limit), injects the configured faults
and dispatches it to its route (unified_<area>.py, native_<platform>.py), the unified API's or a platform's own.

`SandboxApp.handle` is a plain function from a request (method, path, query, headers) to a response
(status, headers, body bytes), so the same app runs in-process as an httpx transport (transport.py) and
behind a loopback HTTP server (server.py).
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

import orjson

from pmw_sandbox.catalogue import WorldConfig
from pmw_sandbox.cursors import CursorBook
from pmw_sandbox.faults import Faults
from pmw_sandbox.native_http import NativeError, Params
from pmw_sandbox.native_kalshi import KalshiNative
from pmw_sandbox.native_polymarket import PolymarketNative
from pmw_sandbox.rate_limit import RateLimiter, rate_limited
from pmw_sandbox.readings import Readings
from pmw_sandbox.router import Router
from pmw_sandbox.sports import SportsWorld
from pmw_sandbox.unified_catalogue import CatalogueRoutes
from pmw_sandbox.unified_context import Context
from pmw_sandbox.unified_health import HealthRoutes
from pmw_sandbox.unified_http import Query, UnifiedError, not_found
from pmw_sandbox.unified_orderbooks import OrderbookRoutes
from pmw_sandbox.unified_paging import Pager
from pmw_sandbox.unified_prices import PriceRoutes
from pmw_sandbox.unified_profiles import ProfileRoutes
from pmw_sandbox.unified_sports import SportsRoutes
from pmw_sandbox.unified_trades import TradeRoutes
from pmw_sandbox.world import Record, shared_world

DEFAULT_API_KEYS: tuple[str, ...] = ("sandbox-key", "sandbox-key-2")
STRICT_RATE_LIMIT_PER_MIN = 100
# The list endpoints, answered 307 to their trailing-slash path under the `redirect` reading.
LISTS = frozenset({"/series", "/events", "/markets", "/trades", "/price-history", "/profile/trades", "/list-futures",
                   "/list-awards"})
# The platforms' own APIs: like the real platforms, they need no key, and the unified budget is not theirs.
NATIVE_PREFIXES = ("/polymarket/", "/kalshi/")


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


class SandboxApp:
    """The unified API and the platforms' own APIs over a sandbox world."""

    def __init__(self, config: SandboxConfig | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.config = config or SandboxConfig()
        self.world = shared_world(self.config.world)
        self.clock = clock
        faults = self.config.faults
        self.context = Context(self.world, self.config.readings, faults, dice=faults.roll(0))
        pager = Pager(self.context, CursorBook(f"sandbox-{self.config.world.seed}".encode(),
                                               self.config.cursor_ttl_s, clock))
        self.limiter = (
            RateLimiter(self.config.rate_limit_per_min, clock, self.config.rate_window_s)
            if self.config.rate_limit_per_min
            else None
        )
        self.requests_served = 0
        self.rate_limited_answers = 0  # 429s sent because the budget was spent (not injected bursts)
        self._lock = threading.Lock()
        self.unified = Router({
            **HealthRoutes(self.context, clock).routes(),
            **CatalogueRoutes(self.context, pager).routes(),
            **TradeRoutes(self.context, pager).routes(),
            **PriceRoutes(self.context).routes(),
            **OrderbookRoutes(self.context).routes(),
            **ProfileRoutes(self.context, pager).routes(),
            **SportsRoutes(self.context, SportsWorld(self.config.world.seed)).routes(),
        })
        self.native = Router({**PolymarketNative(self.world).routes(), **KalshiNative(self.world).routes()})

    @property
    def live_at(self) -> datetime | None:
        """The moment of the world whose live answers (orderbooks, traders' profiles and trades) are served (None:
        the world's now): a test or the demo moves it to take snapshots at chosen times of the world."""
        return self.context.live_at

    @live_at.setter
    def live_at(self, moment: datetime | None) -> None:
        self.context.live_at = moment

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
                return self._answer(method, path.rstrip("/") or "/", Query(query, refuse), headers)
            except UnifiedError as error:
                return _error(error)

    def _answer(self, method: str, path: str, query: Query, headers: Mapping[str, str]) -> SandboxResponse:
        if method != "GET":
            raise UnifiedError(405, "METHOD_NOT_ALLOWED", f"method {method} is not allowed; every endpoint is GET")
        if path.startswith(NATIVE_PREFIXES):
            return self._native(path, query.items)
        self._admit(headers)
        number = self.requests_served
        self.requests_served += 1
        faults = self.config.faults
        if faults.in_429_burst(number):
            raise rate_limited(1.0, self.config.rate_limit_per_min, self.config.rate_window_s)
        dice = self.context.dice = faults.roll(number)
        if faults.error_rate and dice.random() < faults.error_rate:
            if dice.random() < 0.5:
                raise UnifiedError(500, "INTERNAL_ERROR", "injected fault: internal error")
            raise UnifiedError(
                503,
                "PLATFORM_UNAVAILABLE",
                "injected fault: platform unavailable",
                headers={"Retry-After": "1"},
                details={"retry_after": 1},
            )
        found = self.unified.find(path)
        if found is None:
            raise not_found(f"no endpoint at {path}")
        handler, segments = found
        body = handler(query, *segments)
        if faults.unknown_fields:
            _add_unknown_fields(body)
        payload = _iso_times(orjson.dumps(body), self.config.readings.iso_times)
        if faults.malformed_page_rate and dice.random() < faults.malformed_page_rate:
            payload = payload[: len(payload) // 2]
        return SandboxResponse(200, {"content-type": "application/json"}, payload)

    def _admit(self, headers: Mapping[str, str]) -> None:
        """A known API key, within the rate limit, or the error that refuses the request."""
        key = _header(headers, "x-api-key")
        if key is None:
            raise UnifiedError(401, "INVALID_API_KEY", "missing X-API-Key header")
        if key not in self.config.api_keys:
            raise UnifiedError(401, "INVALID_API_KEY", "the X-API-Key header does not carry a known key")
        if self.limiter is not None:
            wait = self.limiter.admit(key)
            if wait is not None:
                self.rate_limited_answers += 1
                raise rate_limited(wait, self.limiter.per_window, self.limiter.window_s)

    def _native(self, path: str, query: Sequence[tuple[str, str]]) -> SandboxResponse:
        """A platform's own answer; its errors come in the platform's own shape."""
        found = self.native.find(path)
        try:
            if found is None:
                raise NativeError(404, {"error": f"no endpoint at {path}"})
            handler, segments = found
            status, body = 200, handler(Params(query), *segments)
        except NativeError as error:
            status, body = error.status, error.body
        return SandboxResponse(status, {"content-type": "application/json"}, orjson.dumps(body))


def _error(error: UnifiedError) -> SandboxResponse:
    inner: Record = {
        "code": error.code,
        "message": error.message,
        "timestamp": datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
    }
    if error.details is not None:
        inner["details"] = error.details
    headers = {"content-type": "application/json", **error.headers}
    return SandboxResponse(error.status, headers, orjson.dumps({"error": inner}))


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


def _add_unknown_fields(body: Record) -> None:
    body["x_sandbox_trace"] = "unknown envelope field"
    for value in body.values():
        records = value if isinstance(value, list) else [value] if isinstance(value, dict) else []
        for record in records:
            if isinstance(record, dict):
                record["x_sandbox_unknown"] = {"note": "a field the spec does not document"}
