"""What the ingestion assets ask of a source for one (platform, day) partition, whichever API it reads.

Every source answers in normalised rows (`Normalised`: rows of the table's schema, rejects with reasons), so
the assets land, check and report the same way whether the rows came from the unified API, the sandbox or
a platform's own API. The unified API's adapter is here; the platforms' are in polymarket.py and kalshi.py.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field, fields
from datetime import UTC, date, datetime, timedelta
from itertools import islice
from typing import Any, Protocol

import polars as pl

from pipeline.engine.config import PriceLabel
from pipeline.engine.normalize.attribution import attribute, outcome_names, with_outcome_names
from pipeline.engine.normalize.frames import Normalised
from pipeline.engine.normalize.unified import NORMALISE_CHUNK, normalise
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


@dataclass(frozen=True)
class MarketsDone:
    """An item of a trades or price-history stream: every market whose id sorts at or before `through` has
    delivered all its rows, so the lake may write them (see `pipeline.engine.lake.stream`)."""

    through: str


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


def live_on(day: date) -> pl.Expr:
    """Normalised markets tradable at some moment of the day: the rule `unified.is_live_on` applies to raw
    records, in polars. A market whose start or end is unknown counts as live, so it is not lost here."""
    day_start = datetime.combine(day, datetime.min.time(), UTC)
    start = pl.coalesce("trading_start_at", "created_at")
    end = pl.col("trading_end_at")
    stop = pl.min_horizontal(end, pl.col("resolved_at"))  # nulls ignored: no resolution means the end
    return start.is_null() | end.is_null() | ((start < day_start + timedelta(days=1)) & (stop > day_start))


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
        records, fetched_at = self.source.markets_live_on(platform, day)
        return normalise("markets", records, platform=platform, day=day, source=self.lineage, fetched_at=fetched_at)

    def members(self, platform: str, day: date, table: str, ids: set[str]) -> Normalised:
        records, fetched_at = self.source.members_of(platform, table, ids)
        return normalise(table, records, platform=platform, day=day, source=self.lineage, fetched_at=fetched_at)

    def trades(self, platform: str, day: date, markets: pl.DataFrame) -> Iterator[Normalised | MarketsDone]:
        """Each market's trades in turn, normalised ``NORMALISE_CHUNK`` records at a time across markets, every
        record attributed to the market it was asked for."""
        day_start, _ = day_bounds(day)
        asked = [market for market, last in last_trade_times(markets) if last is None or last >= day_start]
        read = ((market, trade) for market in asked for trade in self.source.market_trades(day, market))
        every = markets["id"].sort().to_list()
        names = outcome_names(markets)  # once per partition, for every chunk
        fetched_at = datetime.now(UTC)
        while chunk := list(islice(read, NORMALISE_CHUNK)):
            owners, records = zip(*chunk, strict=True)
            del chunk
            result = normalise("trades", list(records), platform=platform, day=day, source=self.lineage,
                               fetched_at=fetched_at, asked_for=owners)
            del records  # the raw records are most of the memory: let them go before the next chunk is read
            yield Normalised(with_outcome_names(result.rows, names), result.rejects)
            before = bisect_left(every, owners[-1])  # the markets before the chunk's last one are complete
            if before:
                yield MarketsDone(every[before - 1])
        if every:
            yield MarketsDone(every[-1])

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
        points = self.source.price_points(markets["id"].to_list(), start - seconds, end + seconds)
        result = normalise("price_history", points, platform=platform, day=day, source=self.lineage,
                           fetched_at=datetime.now(UTC), attributed=True)
        attributed, unattributed = attribute(result, markets)
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
