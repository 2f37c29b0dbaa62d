"""One entry point for the platforms' own responses: `normalize_native(platform, entity, body, ...)`.

`body` is a response body as parsed JSON, without any wrapper. A response may fill more than one table: a
Gamma or Kalshi event response with nested markets gives `events` and `markets`. Every table's result has
rows of exactly its schema and rejects with reasons; nothing is dropped silently.

`context` carries what the request knew and the response does not say:
- `market_id`: Polymarket trades (else the trade's conditionId) and price history (required); Kalshi
  candlesticks when the response has no `ticker`.
- `outcome_id`: Polymarket price history (required): the token id the CLOB history is of.
- `period_interval`: Kalshi candlesticks (required): the request's minutes, 1, 60 or 1440.
Other keys are ignored, so that a recording's metadata can be passed whole.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping
from typing import Any

from pipeline.engine.normalize import kalshi, polymarket
from pipeline.engine.normalized import Normalized

Reader = Callable[..., dict[str, Normalized]]

READERS: dict[str, dict[str, Reader]] = {
    polymarket.PLATFORM: {
        "series": polymarket.normalize_series,
        "events": polymarket.normalize_events,
        "markets": polymarket.normalize_markets,
        "trades": polymarket.normalize_trades,
        "price_history": polymarket.normalize_price_history,
    },
    kalshi.PLATFORM: {
        "series": kalshi.normalize_series,
        "events": kalshi.normalize_events,
        "markets": kalshi.normalize_markets,
        "trades": kalshi.normalize_trades,
        "price_history": kalshi.normalize_price_history,
    },
}


def normalize_native(
    platform: str,
    entity: str,
    body: Any,
    *,
    day: dt.date,
    fetched_at: dt.datetime,
    context: Mapping[str, str] | None = None,
) -> dict[str, Normalized]:
    """Normalize one response of a platform's own API; the result maps each table it fills to its rows.

    Raises ValueError for an unknown platform or entity, a body that is not of the endpoint's shape, or a
    missing context value; records the normalizer cannot read become rejects instead.
    """
    readers = _choice(READERS, platform, "platform")
    reader = _choice(readers, entity, "entity")
    return reader(body, day=day, fetched_at=fetched_at, context=context)


def _choice(options: Mapping[str, Any], value: str, what: str) -> Any:
    if value not in options:
        raise ValueError(f"unknown {what} {value!r}; expected one of {', '.join(options)}")
    return options[value]
