"""The recorded platform responses and what each one is."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any

import orjson

from tests.support.paths import FIXTURES

DAY = date(2026, 1, 12)
FETCHED_AT = datetime(2026, 1, 12, 22, 8, 10, tzinfo=UTC)
CALL_COLUMNS = {"platform", "date", "_source", "_fetched_at"}


@dataclass(frozen=True)
class Case:
    path: str
    platform: str
    entity: str
    rows: dict[str, int]  # rows per table the response fills


CASES = [
    Case("polymarket/gamma_market.json", "polymarket", "markets", {"markets": 1}),
    Case("polymarket/gamma_market_closed_binary_accepting_true.json", "polymarket", "markets", {"markets": 1}),
    Case("polymarket/gamma_market_sports_market_money_line.json", "polymarket", "markets", {"markets": 1}),
    Case("polymarket/gamma_market_closed_after_end_date.json", "polymarket", "markets", {"markets": 1}),
    Case("polymarket/gamma_event.json", "polymarket", "events", {"events": 1, "markets": 2}),
    Case("polymarket/data_api_trades_response.json", "polymarket", "trades", {"trades": 3}),
    Case("polymarket/data_api_trades_captured_response.json", "polymarket", "trades", {"trades": 3}),
    Case("kalshi/series_single_response.json", "kalshi", "series", {"series": 1}),
    Case("kalshi/events_list_response.json", "kalshi", "events", {"events": 5, "markets": 0}),
    Case("kalshi/event_single_response.json", "kalshi", "events", {"events": 1, "markets": 1}),
    Case("kalshi/markets_list_response.json", "kalshi", "markets", {"markets": 5}),
    Case("kalshi/market_single_response.json", "kalshi", "markets", {"markets": 1}),
    Case("kalshi/trades_list_response.json", "kalshi", "trades", {"trades": 5}),
    Case("kalshi/series_candlesticks_response.json", "kalshi", "price_history", {"price_history": 90}),
    Case("polymarket/gamma_events_open_excerpt.json", "polymarket", "events", {"events": 3, "markets": 6}),
    Case("polymarket/gamma_market_closed_zero_zero_legacy.json", "polymarket", "markets", {"markets": 1}),
    Case("kalshi/market_settled_response.json", "kalshi", "markets", {"markets": 1}),
]
ORDERBOOKS = ["polymarket/clob_book_response.json", "kalshi/orderbook_response.json"]  # no warehouse table


def load(path: str) -> tuple[Any, dict[str, str]]:
    """A fixture's response body, and its recording metadata (Kalshi files) as a context."""
    data = orjson.loads((FIXTURES / path).read_bytes())
    if isinstance(data, dict) and set(data) == {"_metadata", "response"}:
        return data["response"], {key: str(value) for key, value in data["_metadata"].items()}
    return data, {}


