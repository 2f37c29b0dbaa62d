"""`/health` and `/platforms`: the service's word on itself and on each platform (the `unavailable` fault)."""

from __future__ import annotations

from collections.abc import Callable

from pipeline.engine.schema import MARKET_PLATFORMS, ORDERBOOK_PLATFORMS
from pmw_sandbox.router import Handler
from pmw_sandbox.unified_context import Context
from pmw_sandbox.unified_http import Query
from pmw_sandbox.world import Record, iso

API_VERSION = "2.0.0"


class HealthRoutes:
    def __init__(self, context: Context, clock: Callable[[], float]) -> None:
        self.context, self.clock = context, clock
        self.started = clock()

    def routes(self) -> dict[str, Handler]:
        return {"/health": self.health, "/platforms": self.platforms}

    def health(self, _query: Query) -> Record:
        down = sorted(self.context.faults.unavailable_platforms)
        return {
            "data": {
                "status": "degraded" if down else "healthy",
                "checks": [{"name": "sandbox-world", "status": "pass", "response_time_ms": 0},
                           *({"name": name, "status": "fail", "response_time_ms": 0} for name in down)],
                "uptime": round(self.clock() - self.started, 3),
                "version": API_VERSION,
                "timestamp": iso(self.context.world.as_of),
            },
            "meta": {"request_time": 0},
        }

    def platforms(self, _query: Query) -> Record:
        platforms = []
        down = self.context.faults.unavailable_platforms
        as_of = self.context.world.as_of
        for p in ORDERBOOK_PLATFORMS:
            full, up = p in MARKET_PLATFORMS, p.value not in down
            platforms.append(
                {
                    "id": p.value,
                    "name": p.value.capitalize(),
                    "status": "available" if up else self.context.readings.unavailable_status,
                    "health": {"status": "pass" if up else "fail", "last_check": iso(as_of), "response_time_ms": 0},
                    "endpoints": [
                        {"name": name, "available": up and (full or name == "orderbook")}
                        for name in ("series", "events", "markets", "orderbook", "trades", "price-history")
                    ],
                    "features": {"orderbook": True, "trades": full, "historical_data": full, "user_profiles": full},
                }
            )
        return {"platforms": platforms, "meta": {"request_time": 0, "total": len(platforms)}}
