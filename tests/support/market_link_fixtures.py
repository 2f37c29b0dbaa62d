"""Real recorded catalogues of Polymarket and Kalshi, and the hand-labelled pairs between them.

The catalogues arrive as the pipeline lands them: through its own direct-platform normalizers, as rows of the
`markets` table. What each file is and where it was recorded: tests/fixtures/market_links/PROVENANCE.md.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import orjson
import polars as pl

from pipeline.engine.normalize import kalshi, polymarket
from pipeline.engine.normalized import Normalized
from tests.support.paths import FIXTURES

MARKET_LINKS = FIXTURES / "market_links"
POLYMARKET_FETCHED_AT = datetime(2026, 1, 12, 8, 2, 45, tzinfo=UTC)
KALSHI_FETCHED_AT = datetime(2026, 2, 26, 8, 50, 31, tzinfo=UTC)
LABELS = ("same", "different")
OUTCOME_MAPS = ("same", "swapped")
# The Kalshi recorder stored each price in dollars under the API's old integer-cent name (`last_price: 0.93`);
# the API sends dollars as `{name}_dollars` decimal strings, so that is where the normalizer reads them.
_RECORDED_DOLLARS = ("yes_bid", "yes_ask", "no_bid", "no_ask", "last_price")


def _load(name: str) -> Any:
    return orjson.loads((MARKET_LINKS / name).read_bytes())


def polymarket_normalized() -> Normalized:
    """The Polymarket catalogue (a Gamma `/markets` array) through `normalize.polymarket.normalize_markets`."""
    body = _load("polymarket_catalogue.json")
    return polymarket.normalize_markets(
        body, day=POLYMARKET_FETCHED_AT.date(), fetched_at=POLYMARKET_FETCHED_AT
    )["markets"]


def _as_api_market(recorded: dict[str, Any]) -> dict[str, Any]:
    market = {key: value for key, value in recorded.items() if key not in _RECORDED_DOLLARS}
    market.update({f"{name}_dollars": str(recorded[name]) for name in _RECORDED_DOLLARS if name in recorded})
    return market


def kalshi_normalized() -> Normalized:
    """The Kalshi catalogue (events with their markets nested) through `normalize.kalshi.normalize_events`."""
    events = [
        {**event, "markets": [_as_api_market(market) for market in event["markets"]]}
        for event in _load("kalshi_catalogue.json")
    ]
    return kalshi.normalize_events(
        {"events": events, "cursor": ""}, day=KALSHI_FETCHED_AT.date(), fetched_at=KALSHI_FETCHED_AT
    )["markets"]


def polymarket_markets() -> pl.DataFrame:
    """The Polymarket catalogue as rows of the `markets` table."""
    return polymarket_normalized().rows


def kalshi_markets() -> pl.DataFrame:
    """The Kalshi catalogue as rows of the `markets` table."""
    return kalshi_normalized().rows


def labelled_pairs() -> pl.DataFrame:
    """The hand-labelled pairs: polymarket_id, kalshi_id, label (same | different), outcome_map (same | swapped
    for a `same` pair, empty otherwise), reason."""
    columns = ("polymarket_id", "kalshi_id", "label", "outcome_map", "reason")
    pairs = pl.read_csv(MARKET_LINKS / "labelled_pairs.csv", schema=dict.fromkeys(columns, pl.String))
    return pairs.with_columns(pl.col("outcome_map").fill_null(""))
