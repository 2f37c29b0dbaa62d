"""Normalization as a stage of its own: the raw pages a source read (`pipeline.engine.raw_pages.RawPage`) in,
rows of the warehouse tables out, whichever API the pages came from.

- `normalize_page` / `normalize_pages`: a page, or the pages of one table (a catalogue listing), as rows;
- `normalized_stream`: the pages of a partition's trades or price history, asked for market by market in id
  order, as a stream of rows attributed to the markets asked for, with a `MarketsDone` as markets complete
  (what `pipeline.engine.lake.stream` lands);
- `kalshi_markets`: Kalshi's markets with the events they belong to.

Pages are normalized in batches, as the APIs need and as speed wants: the unified API's trades across markets,
``NORMALIZE_CHUNK`` records or a little more at a time, each record attributed to the market its page was
asked for; a platform's pages a market at a time, since the Data API's derived trade ids count a
transaction's fills across all of a market's pages.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Iterator
from itertools import chain, groupby, repeat
from typing import Any

import polars as pl

from pipeline.engine.normalize import unified
from pipeline.engine.normalize.attribution import attribute, outcome_names, with_outcome_names
from pipeline.engine.normalize.native import normalize_native
from pipeline.engine.normalize.rows import rejects_frame
from pipeline.engine.normalized import CONFLICTING_REPEAT, MarketsDone, Normalized
from pipeline.engine.raw_pages import UNIFIED, RawPage
from pipeline.engine.schema import REJECTS_SCHEMA, TABLES, Source


def normalize_page(page: RawPage, *, source: str, table: str | None = None) -> Normalized:
    """The page's rows of `table` (by default its entity's table; a platform's event page also fills
    `markets`). `source` is the lineage of the unified API's rows (`api` or `sandbox`); a platform's rows are
    `direct`. A unified price-history page keeps the market ids as sent, for `attribute` to judge. The page's
    conflicting repeats are rejects of its entity's table."""
    if page.api == UNIFIED:
        trades = page.entity == "trades"
        result = unified.normalize(
            page.entity, page.records, platform=page.platform, day=page.day, source=source,
            fetched_at=page.fetched_at, attributed=page.entity == "price_history",
            asked_for=[page.asked_for[0]] * len(page.records) if trades else None,
        )
    else:
        result = normalize_native(page.api, page.entity, page.body, day=page.day, fetched_at=page.fetched_at,
                                  context=page.context)[table or page.entity]
    return result if table not in (None, page.entity) else conflicting_rejected(result, [page])


def conflicting_rejected(result: Normalized, pages: Iterable[RawPage]) -> Normalized:
    """`result` with the pages' conflicting repeats (`RawPage.conflicting`) among its rejects."""
    rejected = [rejects_frame([(item, CONFLICTING_REPEAT) for item in page.conflicting], page.fetched_at)
                for page in pages if page.conflicting]
    return Normalized(result.rows, pl.concat([result.rejects, *rejected])) if rejected else result


def normalize_pages(table: str, pages: Iterable[RawPage], *, source: str) -> Normalized:
    """The rows of `table` that the pages hold, in page order (an empty table when there are no pages)."""
    return concatenated(table, [normalize_page(page, source=source, table=table) for page in pages])


def concatenated(table: str, parts: list[Normalized]) -> Normalized:
    """Several results of one table as one (an empty one without any)."""
    empty = Normalized(pl.DataFrame(schema=TABLES[table].polars_schema), pl.DataFrame(schema=REJECTS_SCHEMA))
    return Normalized(pl.concat([empty.rows, *(p.rows for p in parts)]),
                      pl.concat([empty.rejects, *(p.rejects for p in parts)]))


def normalized_stream(
    pages: Iterable[RawPage], markets: pl.DataFrame, *, source: str
) -> Iterator[Normalized | MarketsDone]:
    """The rows of a partition's trades or price history, read in pages market by market in id order, with a
    `MarketsDone` once markets are complete: a market is complete when a page of a later one arrives.

    `markets` are rows of the `markets` table: the partition's markets, asked for or not. Trades belong to
    the market their page was asked for (`pipeline.engine.normalize.attribution`), and a trade's outcome
    given by id is written as its name.
    """
    every = markets["id"].sort().to_list()
    batches = _Batches(markets, source)
    for batch, newest in _batched(pages):
        result = batches.normalized(batch)
        batch.clear()  # the raw records are most of the memory: let them go before the next batch is read
        yield result
        before = bisect_left(every, newest) if newest is not None else 0
        if before:
            yield MarketsDone(every[before - 1])
    if every:
        yield MarketsDone(every[-1])


def _batched(pages: Iterable[RawPage]) -> Iterator[tuple[list[RawPage], str | None]]:
    """The pages in the batches they are normalized in, each with the market of the newest page read when
    it closed (every market before that one is complete; None at the end)."""
    batch: list[RawPage] = []
    held = 0
    for page in pages:
        if batch and page.api != UNIFIED and page.asked_for != batch[-1].asked_for:
            yield batch, page.asked_for[0]
            batch, held = [], 0
        batch.append(page)
        held += len(page.records)
        if page.api == UNIFIED and held >= unified.NORMALIZE_CHUNK:
            yield batch, page.asked_for[0]
            batch, held = [], 0
    if batch:
        yield batch, None


class _Batches:
    """Normalizes batches of one partition's pages, with what it needs of the partition's markets, read once."""

    def __init__(self, markets: pl.DataFrame, source: str) -> None:
        self.markets, self.source = markets, source
        self._names: pl.DataFrame | None = None
        self._rows: dict[Any, pl.DataFrame] | None = None

    def normalized(self, batch: list[RawPage]) -> Normalized:
        return self._unified(batch) if batch[0].api == UNIFIED else self._native(batch)

    def _unified(self, batch: list[RawPage]) -> Normalized:
        """Trades across markets, each record attributed to the market its page asked for."""
        first = batch[0]
        records = list(chain.from_iterable(page.records for page in batch))
        owners = list(chain.from_iterable(repeat(page.asked_for[0], len(page.records)) for page in batch))
        result = unified.normalize(first.entity, records, platform=first.platform, day=first.day, source=self.source,
                                   fetched_at=first.fetched_at, asked_for=owners)
        if self._names is None:
            self._names = outcome_names(self.markets)  # once per partition, for every batch
        return conflicting_rejected(Normalized(with_outcome_names(result.rows, self._names), result.rejects), batch)

    def _native(self, batch: list[RawPage]) -> Normalized:
        """One market's pages: those asked alike (same context, same shape) as one body."""
        entity = batch[0].entity
        parts = [
            normalize_page(_merged(list(alike)), source=self.source)
            for _, alike in groupby(batch, key=lambda page: (dict(page.context), page.items_key))
        ]
        result = concatenated(entity, parts)
        if entity != "trades":
            return result
        return attribute(result, self._market(batch[0].asked_for[0]))[0]

    def _market(self, market_id: str) -> pl.DataFrame:
        if self._rows is None:
            self._rows = self.markets.partition_by("id", as_dict=True)
        return self._rows[(market_id,)]


def _merged(pages: list[RawPage]) -> RawPage:
    """Pages of one list as one page holding all their items (the first page's other fields)."""
    first = pages[0]
    if len(pages) == 1:
        return first
    items = list(chain.from_iterable(page.records for page in pages))
    body = items if first.items_key is None else {**first.body, first.items_key: items}
    return RawPage(first.api, first.entity, first.platform, first.day, first.fetched_at, body, first.items_key,
                   first.asked_for, first.context, [item for page in pages for item in page.conflicting])


def kalshi_markets(market_pages: Iterable[RawPage], event_pages: Iterable[RawPage]) -> Normalized:
    """Kalshi's markets, each nested under its event as Kalshi's own `with_nested_markets` shape has it, so that
    it carries its event's title, series and category; a market whose event is not listed comes as it is."""
    market_pages, event_pages = list(market_pages), list(event_pages)
    first = market_pages[0]
    by_event: dict[Any, list[Any]] = {}
    for market in chain.from_iterable(page.records for page in market_pages):
        by_event.setdefault(market.get("event_ticker") if isinstance(market, dict) else None, []).append(market)
    events = [{**e, "markets": by_event.pop(e.get("event_ticker"))} for page in event_pages for e in page.records
              if isinstance(e, dict) and e.get("event_ticker") in by_event]
    orphans = [m for ms in by_event.values() for m in ms]

    def page(entity: str, records: list[Any], conflicting: list[Any]) -> RawPage:
        return RawPage(first.api, entity, first.platform, first.day, first.fetched_at, {entity: records}, entity,
                       conflicting=conflicting)

    conflicting = [item for page in market_pages for item in page.conflicting]
    nested = normalize_page(page("events", events, []), source=Source.DIRECT.value, table="markets")
    return concatenated("markets", [nested, normalize_page(page("markets", orphans, conflicting),
                                                           source=Source.DIRECT.value)])
