"""Polymarket's public APIs as a source (PMW_SOURCE=direct): Gamma, the CLOB and the Data API; no key needed.

`PolymarketPages` reads markets live on the day, events, series, taker trades and hourly price history as raw
pages, each host with its own HTTP layer and request budget; `pipeline.engine.normalize.partitions.polymarket`
normalizes them. Which endpoints, and the limits of Gamma and the Data API, in docs/design.md,
"Polymarket as a source".
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from itertools import repeat
from typing import Any

import polars as pl

from pipeline.engine.raw_pages import RawPage
from pipeline.engine.sources.coverage import Coverage
from pipeline.engine.sources.http import HttpLayer
from pipeline.engine.sources.identities import content_keys, field_keys
from pipeline.engine.sources.paging import DataApiOffset, GammaOffset, Stop
from pipeline.engine.sources.unified import day_bounds

PLATFORM = "polymarket"
GAMMA_URL = "https://gamma-api.polymarket.com"
CLOB_URL = "https://clob.polymarket.com"
DATA_URL = "https://data-api.polymarket.com"
RATE_WINDOW_S = 10.0
# Requests per 10 s: Gamma /markets 300 (its /events 500: one budget at the lower), Data /trades 200, CLOB
# /prices-history 1,000.
GAMMA_PER_WINDOW, DATA_PER_WINDOW, CLOB_PER_WINDOW = 300, 200, 1_000
GAMMA_PAGE = 500  # Gamma's largest `limit`
GAMMA_MAX_OFFSET = 10_000  # deeper offset paging on Gamma is refused
MEMBERS_PER_REQUEST = 50  # ids in one Gamma request (`id=..&id=..`), keeping the URL short
DATA_PAGE = 500
DATA_API_OFFSET_CAP = 3_000  # the Data API refuses offsets past about this
# How long after its `endDate` a closed market is still listed (the days it may have traded until `closedTime`):
# a day of Gamma's closed markets is a few thousand (a few pages), well inside `GAMMA_MAX_OFFSET`.
LATE_CLOSE = timedelta(days=1)
TAKER_ONLY = "true"  # one row per match, the taker's (docs.polymarket.com, Data API GET /trades)
HOURLY = 60


class PolymarketPages:
    """Polymarket's answers for a partition, as raw pages.
    `coverage` keeps the markets whose trades the Data API would not page back to the day's start."""

    def __init__(self, gamma: HttpLayer, clob: HttpLayer, data: HttpLayer) -> None:
        self.gamma, self.clob, self.data = gamma, clob, data
        self.coverage = Coverage()

    def market_pages(self, day: date, last: date | None = None) -> Iterator[RawPage]:
        """Gamma markets whose dates overlap the day (or the days up to `last`), those still open past an
        `endDate` before it, and those closed whose `endDate` came up to `LATE_CLOSE` before it, each once."""
        start = datetime.combine(day, datetime.min.time(), UTC)
        end = datetime.combine(last or day, datetime.min.time(), UTC) + timedelta(days=1)
        before = _iso(start - timedelta(seconds=1))  # `end_date_max` inclusive: no market is in two listings
        ending = {"end_date_min": _iso(start), "start_date_max": _iso(end)}
        outliving = {"closed": "false", "end_date_max": before, "start_date_max": _iso(end)}
        late = {"closed": "true", "end_date_min": _iso(start - LATE_CLOSE), "end_date_max": before,
                "start_date_max": _iso(end)}
        for window in (ending, outliving, late):
            walk = GammaOffset(self.gamma, "/markets", window, page_size=GAMMA_PAGE, max_offset=GAMMA_MAX_OFFSET,
                               keys=field_keys("id"))
            for page in walk.pages():
                yield _raw("markets", day, page.body, page.items_key, conflicting=page.conflicting)

    def member_pages(self, day: date, table: str, ids: set[str]) -> Iterator[RawPage]:
        """Gamma `events` or `series` by id, `MEMBERS_PER_REQUEST` ids a request. Gamma's ids are numbers: a
        series named otherwise is named by its slug (the normalizer's fallback to `seriesSlug`), asked by `slug`."""
        numeric = {one for one in ids if one.isdigit()}
        for key, wanted in (("id", sorted(numeric)), ("slug", sorted(ids - numeric))):
            for i in range(0, len(wanted), MEMBERS_PER_REQUEST):
                query = [(key, one) for one in wanted[i : i + MEMBERS_PER_REQUEST]] + [("limit", GAMMA_PAGE)]
                yield _raw(table, day, self.gamma.get_json(f"/{table}", query), None)

    def trade_pages(self, day: date, markets: pl.DataFrame) -> Iterator[RawPage]:
        """Each market's trades in turn (`markets`: rows with `id` and the condition id as `platform_id`),
        newest first, back to the start of `day` (the first of a window) or as deep as the Data API pages."""
        day_start, _ = day_bounds(day)
        for market_id, condition_id in markets.select("id", "platform_id").sort("id").iter_rows():
            query = {"market": condition_id, "takerOnly": TAKER_ONLY}
            walk = DataApiOffset(self.data, "/trades", query, page_size=DATA_PAGE, cap=DATA_API_OFFSET_CAP,
                                 keys=content_keys, stop=_reached_before(day_start))
            oldest = float("inf")
            for page in walk.pages():
                oldest = min(oldest, _oldest(page.items))
                yield _raw("trades", day, page.body, page.items_key, asked_for=(market_id,),
                           context={"market_id": market_id, "taker_only": TAKER_ONLY})
            if walk.capped and oldest < float("inf"):
                self.coverage.incomplete[market_id] = datetime.fromtimestamp(oldest, UTC)

    def price_pages(self, day: date, markets: pl.DataFrame, last: date | None = None) -> Iterator[RawPage]:
        """The CLOB's hourly price history of each outcome token of each market over the day (or the days up
        to `last`)."""
        start, end = day_bounds(day)[0], day_bounds(last or day)[1]
        outcomes = markets.select("id", pl.col("outcomes").list.eval(pl.element().struct.field("id"))).sort("id")
        for market_id, tokens in outcomes.iter_rows():
            for token in tokens or []:
                body = self.clob.get_json("/prices-history", {
                    "market": token, "startTs": start, "endTs": end - 1, "fidelity": HOURLY})
                yield _raw("price_history", day, body, "history", asked_for=(market_id,),
                           context={"market_id": market_id, "outcome_id": token})


def _raw(entity: str, day: date, body: Any, items_key: str | None, *, asked_for: tuple[str, ...] = (),
         context: dict[str, str] | None = None, conflicting: list[Any] | None = None) -> RawPage:
    """A page of Polymarket's answers, fetched now."""
    return RawPage(PLATFORM, entity, PLATFORM, day, datetime.now(UTC), body, items_key, asked_for, context or {},
                   conflicting or [])


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _reached_before(day_start: int) -> Stop:
    """Data API trades come newest first: a page reaching back before the day is the last that matters."""
    return lambda trades: _oldest(trades) < day_start


def _oldest(trades: list[Any]) -> float:
    """The oldest timestamp on a list of Data API trades (unreadable ones ignored; infinity without any)."""
    if set(map(type, trades)) <= {dict}:
        times = list(map(dict.get, trades, repeat("timestamp")))
        if set(map(type, times)) <= {int, float}:  # the usual case: no Python bytecode per trade
            return min(times, default=float("inf"))
    numbers = [t.get("timestamp") for t in trades if isinstance(t, dict)]
    return min((t for t in numbers if isinstance(t, int | float)), default=float("inf"))
