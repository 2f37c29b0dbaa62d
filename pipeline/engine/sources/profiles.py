"""The watched traders from the unified API: each one's profile with metrics, and their trades of a day.

A partition (platform, day) asks `GET /profile/info?platform&user&include_metrics=true` once per watched trader
of the platform, then pages `GET /profile/trades?platform&user&limit=100&cursor` with the cursor until no later
page can hold a trade of the day (`PastTheDay`: in whichever time order the server pages). The spec does not
show `/profile/trades`' payload: its trades are read under `trades` (as `/trades` holds them) or `data`. Paging
keeps each trade once by its `trade_id`; a trader the API does not know (404) is not fatal: the answer is kept
as it came, and becomes a reject with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Any

from pipeline.engine.raw_pages import ProfileAnswer
from pipeline.engine.schema import MAX_LIMIT
from pipeline.engine.sources.http import ApiError, HttpLayer
from pipeline.engine.sources.identities import field_keys
from pipeline.engine.sources.paging import UnifiedCursor
from pipeline.engine.sources.unified import PastTheDay, day_bounds

TRADES_KEYS = ("trades", "data")  # where a /profile/trades answer may hold its trades


@dataclass(frozen=True)
class TraderTrades:
    """A trader's trades as paged (each once), the versions met again with other values, and when read."""

    trader: str
    trades: list[dict[str, Any]]
    conflicting: list[Any] = field(default_factory=list)
    fetched_at: datetime = field(default_factory=lambda: datetime.now(UTC))


def profile_answer(http: HttpLayer, platform: str, trader: str) -> ProfileAnswer:
    """The trader's profile and metrics as received (a 404's error body when the API does not know them)."""
    try:
        body = http.get_json("/profile/info", {"platform": platform, "user": trader, "include_metrics": "true"})
    except ApiError as error:
        if error.status != 404:
            raise
        body = {"error": {"code": error.code or "NOT_FOUND", "message": str(error)}}
    return ProfileAnswer(trader, body, datetime.now(UTC))


def trader_trades(http: HttpLayer, platform: str, trader: str, day: date) -> TraderTrades | None:
    """The trader's trades, paged until the day is behind (other days' trades come along); None for a trader
    the API does not know (their profile answer says so)."""
    walk = _TraderTradesCursor(http, "/profile/trades", TRADES_KEYS[0], {"platform": platform, "user": trader},
                               page_size=MAX_LIMIT["profile_trades"], keys=field_keys("trade_id"),
                               stop=PastTheDay(*day_bounds(day)))
    trades: list[dict[str, Any]] = []
    conflicting: list[Any] = []
    try:
        for page in walk.pages():
            trades += page.items
            conflicting += page.conflicting
    except ApiError as error:
        if error.status != 404:
            raise
        return None
    return TraderTrades(trader, trades, conflicting)


class _TraderTradesCursor(UnifiedCursor):
    """`/profile/trades`' pages, their trades under `trades` or `data` (the first that holds a list)."""

    def _items_key(self, body: Any) -> str:
        if isinstance(body, dict) and isinstance(body.get("pagination"), dict):
            for key in TRADES_KEYS:
                if isinstance(body.get(key), list):
                    return key
        raise ApiError(f"GET {self.endpoint}: expected 'trades' or 'data', and 'pagination', in the response")
