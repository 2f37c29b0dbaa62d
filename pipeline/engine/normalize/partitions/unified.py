"""The unified API (or the sandbox, which speaks it) as a partition source: `UnifiedSource`'s pages, normalized.

Each answer's rows are attributed to the markets asked for, price points are kept once across the answers of a
batch (`PointsOnce`), and the catalogue's and the answers' own figures are handed on for the reconciliations.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta

import polars as pl

from pipeline.engine.config import PriceLabel
from pipeline.engine.normalize.attribution import attribute
from pipeline.engine.normalize.pages import normalize_pages, normalized_stream
from pipeline.engine.normalize.rows import rejects_frame
from pipeline.engine.normalized import CONFLICTING_REPEAT, MarketsDone, Normalized
from pipeline.engine.schema import TABLES
from pipeline.engine.service_figures import ServiceFigures
from pipeline.engine.sources.coverage import Coverage
from pipeline.engine.sources.http import RequestStats
from pipeline.engine.sources.price_plan import price_calls
from pipeline.engine.sources.unified import HOURLY, UnifiedSource, day_bounds


def trade_markets(markets: pl.DataFrame, start: int, end: int) -> list[str]:
    """The markets (rows of the `markets` table) whose trades are asked for from `start` to `end` (Unix seconds),
    in id order: all but those whose record, synced at or after `end`, says they last traded before `start`. A
    record synced earlier cannot say so: the market may have traded since."""
    latest = pl.col("last_trades").list.eval(pl.element().struct.field("timestamp")).list.max()
    skipped = (latest.dt.epoch("s") < start) & (pl.col("last_synced_at").dt.epoch("s") >= end)
    return markets.filter(~skipped.fill_null(False)).sort("id")["id"].to_list()


class UnifiedPartitions:
    """The unified API (or the sandbox, which speaks it) as a `PartitionSource`.

    Trades are asked for market by market and price history 10 markets a call, for one day or, through the
    `window_` methods, for a window of days at once (`WindowSource`); each answer's rows are
    attributed to the markets asked for (`pipeline.engine.normalize.attribution`), whatever market id they carry, and
    a `MarketsDone` follows as markets complete. Price history is asked for one period beyond the day on each
    side, so that no point of the day is lost whichever way the server reads `start_ts`/`end_ts`; a point's
    time is stored as its period's start, whichever end the server labels it by (`price_label`).
    """

    def __init__(self, source: UnifiedSource, platform: str, lineage: str,
                 price_label: PriceLabel = PriceLabel.PERIOD_START) -> None:
        self.source, self.platform, self.lineage, self.price_label = source, platform, lineage, price_label

    def markets(self, day: date) -> Normalized:
        return normalize_pages("markets", self.source.market_pages(self.platform, day), source=self.lineage)

    def members(self, day: date, table: str, ids: set[str]) -> Normalized:
        return normalize_pages(table, self.source.member_pages(self.platform, day, table, ids), source=self.lineage)

    def trades(self, day: date, markets: pl.DataFrame) -> Iterator[Normalized | MarketsDone]:
        yield from self.window_trades(day, day, markets)

    def price_history(self, day: date, markets: pl.DataFrame) -> Iterator[Normalized | MarketsDone]:
        yield from self.window_price_history(day, day, markets)

    def asked(self, table: str, markets: pl.DataFrame, day: date) -> set[str]:
        """Trades: all but the markets whose record, synced after the day, says they last traded before it
        (`trade_markets`); price history: all."""
        return set(trade_markets(markets, *day_bounds(day)) if table == "trades" else markets["id"].to_list())

    def window_markets(self, first: date, last: date) -> Normalized:
        return normalize_pages("markets", self.source.market_pages(self.platform, first, last), source=self.lineage)

    def window_trades(self, first: date, last: date,
                      markets: pl.DataFrame) -> Iterator[Normalized | MarketsDone]:
        """Each market's trades in turn, paged once back to the window's first day (except markets whose
        record, synced after the window, says they last traded before it), normalized across markets, every
        record attributed to the market it was asked for."""
        start, end = day_bounds(first)[0], day_bounds(last)[1]
        platform_ids = dict(markets.select("id", "platform_id").iter_rows())
        asked = trade_markets(markets, start, end)
        pages = self.source.trade_pages(self.platform, first, asked, (start, end), platform_ids)
        yield from normalized_stream(pages, markets, source=self.lineage)

    def window_price_history(self, first: date, last: date,
                             markets: pl.DataFrame) -> Iterator[Normalized | MarketsDone]:
        """The markets' points over the window, 10 markets a call, cut in time where the cap requires; a point
        that several answers of a batch hold (a server may answer every period that overlaps the span asked, so
        the period at a cut comes in both halves) is kept once by its key (`PointsOnce`)."""
        seconds = HOURLY * 60
        start, end = day_bounds(first)[0] - seconds, day_bounds(last)[1] + seconds
        once = PointsOnce()
        for call in price_calls(markets, start, end):
            for answer in self._price_batch(first, call.markets, call.start, call.end):
                yield once.keep(answer)
            if call.last_of_batch:
                once = PointsOnce()
                yield MarketsDone(call.markets["id"][-1])

    def _price_batch(self, day: date, markets: pl.DataFrame, start: int,
                     end: int) -> Iterator[Normalized]:
        """The batch's points between two moments, attributed; asked again in halves while some cannot be told
        apart."""
        pages = self.source.price_pages(self.platform, day, markets["id"].to_list(), start, end,
                                        markets["platform_id"].to_list())
        attributed, unattributed = attribute(normalize_pages("price_history", pages, source=self.lineage), markets)
        if unattributed and markets.height > 1:
            half = markets.height // 2
            yield from self._price_batch(day, markets.head(half), start, end)
            yield from self._price_batch(day, markets.slice(half), start, end)
            return
        if self.price_label == PriceLabel.PERIOD_END:
            period = timedelta(minutes=HOURLY)
            attributed = Normalized(attributed.rows.with_columns(pl.col("timestamp") - period), attributed.rejects)
        yield attributed

    def requests(self) -> RequestStats:
        return self.source.http.stats.snapshot()

    def coverage(self) -> Coverage:
        return Coverage()

    def figures(self, table: str) -> ServiceFigures:
        """The catalogue listing's figures for `markets`, `events` (with the markets listed per event) and `series`;
        the session's answers' for `trades` (each market's walk) and `price_history`."""
        if table == "trades":
            walks = {f"trades?market_id={market}": walked for market, walked in self.source.trade_listings.items()}
            return ServiceFigures(walks, meta=self.source.answers[table])
        if table == "price_history":
            return ServiceFigures(price_answers=list(self.source.price_answers), meta=self.source.answers[table])
        catalogue = self.source.catalogue(self.platform)
        figures = ServiceFigures({table: catalogue.listings[table]} if table in catalogue.listings else {})
        if table in catalogue.answers:
            figures.meta = catalogue.answers[table]
        if table == "events":  # how many of the listed market records name each `event_id`
            figures.listed_per_event = pl.DataFrame(
                {"event_id": list(catalogue.listed_per_event), "listed": list(catalogue.listed_per_event.values())},
                schema={"event_id": pl.String(), "listed": pl.Int64()})
        return figures


POINT_KEY = list(TABLES["price_history"].primary_key)


class PointsOnce:
    """Price points kept once by their key across the answers of one batch: the first version met lands; a later
    one with other values is rejected as a conflicting repeat (`repeats_agree` counts it), one with the same
    values is dropped. Holds the keys and a hash of the values of the batch's points (10 markets)."""

    def __init__(self) -> None:
        schema = TABLES["price_history"].polars_schema
        self.kept = pl.DataFrame(schema={**{name: schema[name] for name in POINT_KEY}, "_version": pl.UInt64()})

    def keep(self, answer: Normalized) -> Normalized:
        values = [c for c in answer.rows.columns if c not in POINT_KEY and c != "_fetched_at"]
        rows = answer.rows.with_columns(pl.struct(values).hash().alias("_version"),
                                        pl.struct(POINT_KEY).is_first_distinct().alias("_first"))
        first = rows.filter("_first")
        fresh = first.join(self.kept, on=POINT_KEY, how="anti", nulls_equal=True)
        self.kept = pl.concat([self.kept, fresh.select(*POINT_KEY, "_version")])
        again = first.join(fresh, on=POINT_KEY, how="anti", nulls_equal=True)
        repeated = pl.concat([again, rows.filter(~pl.col("_first"))])
        conflicting = repeated.join(self.kept, on=POINT_KEY, nulls_equal=True, suffix="_kept").filter(
            pl.col("_version") != pl.col("_version_kept")).select(answer.rows.columns)
        rejects = answer.rejects
        if conflicting.height:
            fetched_at = conflicting["_fetched_at"][0] if "_fetched_at" in conflicting.columns else datetime.now(UTC)
            repeats = rejects_frame([(row, CONFLICTING_REPEAT) for row in conflicting.to_dicts()], fetched_at)
            rejects = pl.concat([rejects, repeats])
        return Normalized(fresh.select(answer.rows.columns), rejects)
