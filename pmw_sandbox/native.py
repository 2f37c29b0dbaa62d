"""The platforms' own APIs over the sandbox world, so the direct (platform) path runs offline.

One app serves both worlds: the unified API at its usual paths, Polymarket under `/polymarket/gamma/...`,
`/polymarket/clob/...` and `/polymarket/data/...`, Kalshi under `/kalshi/...` (its v2 paths). Like the real
platforms, these routes need no API key. Rendering lives in native_polymarket.py and native_kalshi.py; this
module only routes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from pmw_sandbox.native_http import NativeError, Params
from pmw_sandbox.native_kalshi import KalshiNative
from pmw_sandbox.native_polymarket import PolymarketNative
from pmw_sandbox.world import World

NATIVE_PREFIXES = ("/polymarket/", "/kalshi/")


def is_native(path: str) -> bool:
    return path.startswith(NATIVE_PREFIXES)


class NativeApi:
    """Answers a native request with (status, body); errors come in the platform's own shape."""

    def __init__(self, world: World) -> None:
        self.polymarket = PolymarketNative(world)
        self.kalshi = KalshiNative(world)
        self._routes: dict[str, Callable[[Params], Any]] = {
            "/polymarket/gamma/markets": self.polymarket.markets,
            "/polymarket/gamma/events": self.polymarket.events,
            "/polymarket/gamma/events/pagination": self.polymarket.events_page,
            "/polymarket/gamma/series": self.polymarket.series,
            "/polymarket/clob/prices-history": self.polymarket.prices_history,
            "/polymarket/data/trades": self.polymarket.trades,
            "/kalshi/series": self.kalshi.series_list,
            "/kalshi/events": self.kalshi.events,
            "/kalshi/markets": self.kalshi.markets,
            "/kalshi/markets/trades": self.kalshi.trades,
            "/kalshi/markets/candlesticks": self.kalshi.batch_candlesticks,
            "/kalshi/historical/cutoff": self.kalshi.cutoff_record,
            "/kalshi/historical/markets": lambda p: self.kalshi.markets(p, historical=True),
            "/kalshi/historical/trades": lambda p: self.kalshi.trades(p, historical=True),
        }

    def handle(self, path: str, query: Sequence[tuple[str, str]]) -> tuple[int, Any]:
        try:
            return 200, self._route(path, Params(query))
        except NativeError as error:
            return error.status, error.body

    def _route(self, path: str, params: Params) -> Any:
        handler = self._routes.get(path)
        if handler is not None:
            return handler(params)
        parts = path.strip("/").split("/")
        if parts[0] == "kalshi" and len(parts) == 3 and parts[1] in ("series", "events", "markets"):
            single = {"series": self.kalshi.series_one, "events": self.kalshi.event_one}
            return single.get(parts[1], self.kalshi.market_one)(parts[2])
        if (
            parts[0] == "kalshi"
            and len(parts) == 6
            and (parts[1], parts[3], parts[5])
            == (
                "series",
                "markets",
                "candlesticks",
            )
        ):
            return self.kalshi.candlesticks(parts[2], parts[4], params)
        if parts[:3] == ["kalshi", "historical", "markets"] and len(parts) == 5 and parts[4] == "candlesticks":
            return self.kalshi.candlesticks(None, parts[3], params)
        raise NativeError(404, {"error": f"no endpoint at {path}"})
