"""The price check of the tables whose prices are columns: each wrong price found, a null one never."""

from __future__ import annotations

import math
from datetime import UTC, date, datetime
from typing import Any

from pipeline.engine.checks import CHECKS, PartitionContext, outcome
from pipeline.engine.normalize.unified import normalize

DAY = date(2026, 11, 20)
START = int(datetime(2026, 11, 20, tzinfo=UTC).timestamp())
CONTEXT = PartitionContext("kalshi", DAY, frozenset({"m1"}))


def point(hour: int, **candle: Any) -> dict[str, Any]:
    return {"timestamp": START + 3600 * hour, "platform": "kalshi", "marketId": "m1", "outcomeId": "yes",
            "price": {"open": 0.5, "high": 0.6, "low": 0.4, "close": 0.5, **candle}}


def price_check(table: str) -> Any:
    return next(check for check in CHECKS[table] if check.name == "prices_in_unit_interval")


def test_every_wrong_candle_price_is_found_and_a_missing_one_is_not() -> None:
    records = [point(0), point(1, open=math.nan), point(2, low=-0.1), point(3, high=1.5, close=1.2),
               point(4, close=None), point(5, open=None, high=None, low=None, close=None)]
    rows = normalize("price_history", records, platform="kalshi", day=DAY, source="sandbox",
                     fetched_at=datetime(2026, 11, 21, tzinfo=UTC)).rows
    found = outcome(price_check("price_history"), rows, CONTEXT)
    assert (found.passed, found.violations) == (False, 4)
    shown = [(row["timestamp"].hour, row["price"]) for row in found.examples]
    assert shown[1:] == [(2, -0.1), (3, 1.5), (3, 1.2)] and shown[0][0] == 1 and math.isnan(shown[0][1])


def test_a_wrong_trade_price_is_found() -> None:
    trade = {"trade_id": "t", "market_id": "m1", "platform": "kalshi", "price": 0.5, "size": 1.0, "timestamp": START}
    records = [trade, {**trade, "trade_id": "u", "price": -0.5}, {**trade, "trade_id": "v", "price": math.nan}]
    rows = normalize("trades", records, platform="kalshi", day=DAY, source="sandbox",
                     fetched_at=datetime(2026, 11, 21, tzinfo=UTC)).rows
    found = outcome(price_check("trades"), rows, CONTEXT)
    assert found.violations == 2 and [row["trade_id"] for row in found.examples] == ["u", "v"]
