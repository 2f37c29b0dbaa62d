"""What the ingestion assets ask of a source for one (platform, day) partition, whichever API it reads.

Every source answers in normalised rows (`Normalised`: rows of the table's schema, rejects with reasons), so
the assets land, check and report the same way whether the rows came from the unified API, the sandbox or
a platform's own API. A source composes two stages that can also run apart: extraction, which reads an API's
answers as raw pages (`pipeline.engine.raw_pages.RawPage`), and normalisation, which turns pages into rows
(`pipeline.engine.normalize.pages`). The unified API's source is here (its extraction in unified.py); the
platforms' are in polymarket.py and kalshi.py.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field, fields
from datetime import date, datetime, timedelta
from typing import Any, Protocol

import polars as pl

from pipeline.engine.config import PriceLabel
from pipeline.engine.normalised import MarketsDone, Normalised
from pipeline.engine.normalize.attribution import attribute
from pipeline.engine.normalize.pages import normalise_pages, normalised_stream
from pipeline.engine.schema import MAX_PRICE_HISTORY_MARKETS
from pipeline.engine.sources.http import RequestStats
from pipeline.engine.sources.unified import HOURLY, UnifiedSource, day_bounds


@dataclass
class Coverage:
    """How much of the partition the source could reach; reported as metadata, never hidden.

    `incomplete` names the markets whose day the source could not read to its start (the Polymarket Data API
    stops paging past an offset cap), each with the oldest moment it did reach.
    """

    incomplete: dict[str, datetime] = field(default_factory=dict)

    def as_metadata(self) -> dict[str, Any]:
        if not self.incomplete:
            return {"complete": True}
        shown = dict(sorted(self.incomplete.items())[:20])
        return {
            "complete": False,
            "incomplete_markets": len(self.incomplete),
            "reached_back_to": min(self.incomplete.values()).isoformat(),
            "incomplete_examples": {market: moment.isoformat() for market, moment in shown.items()},
        }


class PartitionSource(Protocol):
    """A source session (one asset step): the partition's rows, table by table, and what it cost."""

    def markets(self, platform: str, day: date) -> Normalised:
        """The markets live on the day (tradable at some moment of it)."""
        ...

    def members(self, platform: str, day: date, table: str, ids: set[str]) -> Normalised:
        """The `events` or `series` with these ids."""
        ...

    def trades(self, platform: str, day: date, markets: pl.DataFrame) -> Iterator[Normalised | MarketsDone]:
        """Trades of the partition's markets (rows of the `markets` table), each row's `market_id` the id of the
        market it was asked for, with a `MarketsDone` once markets are complete (asked for in id order).

        Rows of other days may come along; the caller keeps the day's.
        """
        ...

    def price_history(self, platform: str, day: date, markets: pl.DataFrame) -> Iterator[Normalised | MarketsDone]:
        """Price points of the partition's markets within the day, as `trades` delivers trades."""
        ...

    def requests(self) -> RequestStats:
        """What the session's requests cost so far."""
        ...

    def coverage(self) -> Coverage:
        """How far the session's reads reached."""
        ...


def combined(stats: list[RequestStats]) -> RequestStats:
    """The request counters of several HTTP layers (one per host) as one."""
    total = RequestStats(by_endpoint=Counter())
    for one in stats:
        for item in fields(RequestStats):
            setattr(total, item.name, getattr(total, item.name) + getattr(one, item.name))
    return total


def last_trade_times(markets: pl.DataFrame) -> list[tuple[str, int | None]]:
    """Each market with the time of its latest trade as the listing reported it (None if it did not)."""
    latest = markets.select(
        pl.col("id"),
        pl.col("last_trades").list.eval(pl.element().struct.field("timestamp")).list.max().alias("last"),
    ).sort("id")
    return [(market_id, int(last.timestamp()) if last is not None else None) for market_id, last in latest.iter_rows()]


class UnifiedPartitions:
    """The unified API (or the sandbox, which speaks it) as a `PartitionSource`.

    Trades are asked for market by market and price history 10 markets a call; each answer's rows are
    attributed to the markets asked for (`pipeline.engine.normalize.attribution`), whatever market id they carry, and
    a `MarketsDone` follows as markets complete. Price history is asked for one period beyond the day on each
    side, so that no point of the day is lost whichever way the server reads `start_ts`/`end_ts`; a point's
    time is stored as its period's start, whichever end the server labels it by (`price_label`).
    """

    def __init__(self, source: UnifiedSource, lineage: str, price_label: PriceLabel = PriceLabel.PERIOD_START) -> None:
        self.source, self.lineage, self.price_label = source, lineage, price_label

    def markets(self, platform: str, day: date) -> Normalised:
        return normalise_pages("markets", self.source.market_pages(platform, day), source=self.lineage)

    def members(self, platform: str, day: date, table: str, ids: set[str]) -> Normalised:
        return normalise_pages(table, self.source.member_pages(platform, day, table, ids), source=self.lineage)

    def trades(self, platform: str, day: date, markets: pl.DataFrame) -> Iterator[Normalised | MarketsDone]:
        """Each market's trades in turn (except markets whose listing says they last traded before the day),
        normalised across markets, every record attributed to the market it was asked for."""
        day_start, _ = day_bounds(day)
        asked = [market for market, last in last_trade_times(markets) if last is None or last >= day_start]
        yield from normalised_stream(self.source.trade_pages(platform, day, asked), markets, source=self.lineage)

    def price_history(self, platform: str, day: date, markets: pl.DataFrame) -> Iterator[Normalised | MarketsDone]:
        ordered = markets.sort("id")
        for batch in ordered.iter_slices(MAX_PRICE_HISTORY_MARKETS):
            yield from self._price_batch(platform, day, batch)
            yield MarketsDone(batch["id"][-1])

    def _price_batch(self, platform: str, day: date, markets: pl.DataFrame) -> Iterator[Normalised]:
        """The batch's points, attributed; asked again in halves while some cannot be told apart."""
        start, end = day_bounds(day)
        period = timedelta(minutes=HOURLY)
        seconds = int(period.total_seconds())
        pages = self.source.price_pages(platform, day, markets["id"].to_list(), start - seconds, end + seconds)
        attributed, unattributed = attribute(normalise_pages("price_history", pages, source=self.lineage), markets)
        if unattributed and markets.height > 1:
            half = markets.height // 2
            yield from self._price_batch(platform, day, markets.head(half))
            yield from self._price_batch(platform, day, markets.slice(half))
            return
        if self.price_label == PriceLabel.PERIOD_END:
            attributed = Normalised(attributed.rows.with_columns(pl.col("timestamp") - period), attributed.rejects)
        yield attributed

    def requests(self) -> RequestStats:
        return self.source.http.stats.snapshot()

    def coverage(self) -> Coverage:
        return Coverage()
