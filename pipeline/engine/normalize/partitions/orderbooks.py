"""A snapshot round's rows: every market's book taken from the unified API (`sources.orderbooks.take_round`),
normalized into `orderbook_levels` and `orderbook_snapshots` (`normalize.orderbooks.normalize_round`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import date, datetime

from pipeline.engine.normalize.orderbooks import RoundRows, normalize_round
from pipeline.engine.sources.http import HttpLayer
from pipeline.engine.sources.orderbooks import take_round


def round_rows(http: HttpLayer, platform: str, day: date, round_at: datetime, market_ids: Sequence[str],
               platform_ids: Mapping[str, str], source: str) -> RoundRows:
    """The round's rows of the markets asked (`platform_ids`: their platform ids where known), in the partition
    (platform, day) under the round's time; `source` is the rows' lineage."""
    return normalize_round(take_round(http, platform, market_ids, platform_ids), platform, day, round_at, source)
