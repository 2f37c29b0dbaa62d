"""`pmw demo`: the offline walk-through on the sandbox.

Until the ingestion assets land, the demo walks the sandbox's unified API the way the pipeline will (every
list endpoint paged with cursors at the largest page size, trades and price history per market) and prints
what the last N days hold per platform.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from typing import Any

import httpx
import orjson

from pipeline.sandbox.app import SandboxApp, SandboxConfig
from pipeline.sandbox.catalogue import WorldConfig
from pipeline.sandbox.transport import sandbox_client
from pipeline.schema import MARKET_PLATFORMS, MAX_LIMIT, MAX_PRICE_HISTORY_MARKETS


def walk(client: httpx.Client, path: str, items_key: str, params: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every item of a cursor-paginated list."""
    cursor: str | None = None
    while True:
        page = client.get(path, params={**params, **({"cursor": cursor} if cursor else {})})
        page.raise_for_status()
        body = orjson.loads(page.content)
        yield from body[items_key]
        cursor = body["pagination"]["next_cursor"]
        if not body["pagination"]["has_more"] or cursor is None:
            return


def _live_on(market: dict[str, Any], day: date) -> bool:
    start = datetime.fromisoformat(market["trading_start_at"])
    stops = [datetime.fromisoformat(market["trading_end_at"])]
    if market["resolved_at"]:
        stops.append(datetime.fromisoformat(market["resolved_at"]))
    day_start = datetime.combine(day, datetime.min.time(), UTC)
    return start < day_start + timedelta(days=1) and min(stops) > day_start


def run_demo(world: WorldConfig, days: int) -> int:
    app = SandboxApp(SandboxConfig(world=world))
    client = sandbox_client(app)
    last_day = world.end_day
    window = [last_day - timedelta(days=i) for i in range(days - 1, -1, -1)]
    print(f"pmw demo: sandbox world seed {world.seed}, days {window[0]} .. {window[-1]}\n")
    print(f"{'platform':<11} {'day':<11} {'series':>6} {'events':>6} {'markets':>7} {'trades':>7} {'prices':>7}")
    for platform in MARKET_PLATFORMS:
        markets = list(walk(client, "/markets", "markets", {"platform": platform.value, "limit": MAX_LIMIT["markets"]}))
        for day in window:
            live = [m for m in markets if _live_on(m, day)]
            day_start = int(datetime.combine(day, datetime.min.time(), UTC).timestamp())
            trades = 0
            for market in live:
                params = {"market_id": market["id"], "limit": MAX_LIMIT["trades"]}
                for trade in walk(client, "/trades", "trades", params):
                    if trade["timestamp"] < day_start:
                        break
                    trades += trade["timestamp"] < day_start + 86_400
            points = 0
            for i in range(0, len(live), MAX_PRICE_HISTORY_MARKETS):
                batch = ",".join(m["id"] for m in live[i : i + MAX_PRICE_HISTORY_MARKETS])
                body = client.get(
                    "/price-history",
                    params={
                        "market_ids": batch,
                        "start_ts": day_start,
                        "end_ts": day_start + 86_399,
                        "interval": 60,
                        "limit": MAX_LIMIT["price_history"],
                    },
                ).json()
                points += len(body["data"])
            print(
                f"{platform.value:<11} {day.isoformat():<11} {len({m['series_id'] for m in live}):>6} "
                f"{len({m['event_id'] for m in live}):>6} {len(live):>7} {trades:>7} {points:>7}"
            )
    print(f"\n{app.requests_served} requests served by the in-process sandbox.")
    return 0
