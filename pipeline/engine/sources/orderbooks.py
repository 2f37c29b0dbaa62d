"""Snapshot rounds: which books a round takes, and taking them from the unified API.

A round of a platform asks `GET /markets/{id}/orderbook?platform=<platform>` once per market of its list:
for Polymarket and Kalshi the `top_n` busiest open markets of the latest markets partition (by 24-hour
volume) followed by the watch list's markets of the platform, for Limitless and Manifold (which have no
catalogue in the API) the watch list alone. A round therefore costs exactly as many requests as its list is
long, retries aside. A market the API answers 404 for by its id is asked once more by its platform id, and then
the platform's other markets by theirs first (market_ids.py); a market the API does not know either way (404) is
not fatal: its answer is kept as it came, and becomes a reject with the reason. A book belongs to the market
asked for, by whichever id.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from urllib.parse import quote

import polars as pl

from pipeline.engine.raw_pages import BookAnswer
from pipeline.engine.schema import MarketStatus
from pipeline.engine.sources.http import ApiError, HttpLayer
from pipeline.engine.sources.market_ids import MarketIdParam


def busiest_open(markets: pl.DataFrame | None, top_n: int) -> list[str]:
    """The ids of the `top_n` open markets with the most 24-hour volume (ties by id), busiest first."""
    if markets is None or top_n == 0:
        return []
    ranked = (markets.filter(pl.col("status") == MarketStatus.OPEN.value)
              .unique("id", keep="first")
              .sort(["volume_24h", "id"], descending=[True, False], nulls_last=True))
    return ranked["id"].head(top_n).to_list()


def round_list(busiest: Sequence[str], watched: Sequence[str]) -> list[str]:
    """The round's markets: the busiest, then the watched ones not among them, each once."""
    return list(dict.fromkeys([*busiest, *watched]))


def book_path(market_id: str) -> str:
    """The orderbook endpoint of a market, its id escaped whole (an id may hold any character)."""
    return f"/markets/{quote(market_id, safe='')}/orderbook"


def take_round(http: HttpLayer, platform: str, market_ids: Sequence[str], platform_ids: Mapping[str, str] | None = None,
               clock: Callable[[], datetime] = lambda: datetime.now(UTC)) -> list[BookAnswer]:
    """Every market's book, in list order, each as received; ApiError when one cannot be had (a 404 aside).
    `platform_ids`: the markets' platform ids where known, for a server that knows a market only by that."""
    answers = []
    param = MarketIdParam()
    for market_id in market_ids:
        try:
            body = param.ask([market_id], [(platform_ids or {}).get(market_id)],
                             lambda asked: http.get_json(book_path(asked[0]), {"platform": platform}))
        except ApiError as error:
            if error.status != 404:
                raise
            body = {"error": {"code": error.code or "NOT_FOUND", "message": str(error)}}
        answers.append(BookAnswer(market_id, body, clock()))
    return answers
