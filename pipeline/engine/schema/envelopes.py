"""The unified API's envelopes and limits: pagination, errors, each answer's `meta` keys, the `limit` maxima."""

from __future__ import annotations

import polars as pl

from pipeline.engine.schema.core import Field, number, string

# Envelopes and small objects of the unified API that are not warehouse tables.
PAGINATION_FIELDS: tuple[Field, ...] = (
    number("total", required=True),
    number("limit", required=True),
    Field("has_more", dtype=pl.Boolean(), required=True),
    string("next_cursor", required=True, nullable=True),
)
ERROR_FIELDS: tuple[Field, ...] = (
    string("code", required=True),
    string("message", required=True),
    string("timestamp", required=True),
    Field("details", kind="json", doc="optional extra information, e.g. retry_after"),
)

_LIST_META = ("platforms_queried", "request_time", "cache_hit", "data_freshness")
META_FIELDS: dict[str, tuple[str, ...]] = {
    "series": _LIST_META,
    "events": _LIST_META,
    "markets": _LIST_META,
    "event": ("request_time", "cache_hit", "data_freshness"),
    "market": ("request_time", "cache_hit", "data_freshness"),
    "trades": ("request_time", "market_id", "platform", "data_freshness"),
    "price_history": (
        "total_points",
        "platforms",
        "time_range",
        "interval",
        "request_time",
        "cache_hit",
        "data_freshness",
    ),
    "orderbook": ("request_time",),
    "health": ("request_time",),
    "platforms": ("request_time", "total"),
    "league_info": ("request_time",),
    "sports": ("platforms_queried", "request_time", "data_freshness", "platform_errors"),
}

# Maximum `limit` per list endpoint; a larger value is capped to it (spec: Limits).
MAX_LIMIT: dict[str, int] = {
    "series": 100,
    "events": 100,
    "markets": 250,
    "trades": 1000,
    "price_history": 5000,
    "profile_trades": 100,
}
# The stated maxima disagree between the spec's references: the pagination guide says 1 to 25 for series and
# events, earlier change records 25 for markets. A server may refuse a `limit` above its own maximum instead of
# capping it; the pipeline then pages at these.
LOWEST_DOCUMENTED_LIMIT: dict[str, int] = {"series": 25, "events": 25, "markets": 25}
MAX_PRICE_HISTORY_MARKETS = 10
PRICE_HISTORY_INTERVALS: tuple[int, ...] = (1, 60, 1440)
