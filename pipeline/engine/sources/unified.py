"""The unified API as a source: what one (platform, day) partition needs, with the fewest requests.

The API has no date filter on its catalogue, so the catalogue (markets, events, series) is listed whole at the
largest page sizes, once, keeping only the markets a window ending on the day asked may hold (`Catalogue.since`),
in a short-lived on-disk cache that every run and process shares: a backfill of many days lists it once. From it:

- markets live on the day: tradable at some moment of it (trading start before the day ends, and neither
  the scheduled end nor the resolution before it starts); a market that a record synced before the day ended
  leaves out is asked about again (`/markets/{id}`), and kept unless its own record leaves it out for sure;
- their events and series;
- trades: per live market, paging stops at the first page past the day by PMW_TRADE_LATENESS_S (in whichever
  time order the server pages, by the trades' times or as it recorded them); a market is not asked at all only
  when its record, synced after the day ended, says its last trade came before the day;
- price history: 10 markets per call, hourly, at the maximum points per call (a batch that may have been
  cut at the cap is split and asked again).
"""

from __future__ import annotations

import gc
import hashlib
import logging
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, timedelta
from itertools import chain, repeat
from pathlib import Path
from typing import Any
from urllib.parse import quote

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.engine.config import MAX_WINDOW_DAYS, Settings
from pipeline.engine.files import replaced_atomically
from pipeline.engine.garbage_collection import cyclic_gc_per_chunk
from pipeline.engine.locks import held
from pipeline.engine.raw_pages import UNIFIED, RawPage
from pipeline.engine.schema import LOWEST_DOCUMENTED_LIMIT, MAX_LIMIT
from pipeline.engine.service_figures import AnswerMeta, ListFigures, PriceAnswer
from pipeline.engine.sources.http import ApiError, HttpLayer
from pipeline.engine.sources.identities import field_keys
from pipeline.engine.sources.liveness import live_records, partition_records, records_from, unsure_records
from pipeline.engine.sources.market_ids import MarketIdParam
from pipeline.engine.sources.market_skim import MarketListing, SkimmedMarkets
from pipeline.engine.sources.page_bounds import Evidence
from pipeline.engine.sources.paging import Page, UnifiedCursor

log = logging.getLogger("pipeline.engine.sources.unified")
Record = dict[str, Any]
DAY_S = 86_400
HOURLY = 60
KEEP_BATCH = 5_000  # listed market records judged together, as the pages stream


def day_bounds(day: date) -> tuple[int, int]:
    """Unix seconds of the day's first second and of the next day's first second."""
    start = int(datetime.combine(day, datetime.min.time(), UTC).timestamp())
    return start, start + DAY_S


@dataclass(frozen=True)
class Catalogue:
    """A platform's series, events and markets as listed, per list the records met again with other values under
    an id already listed (`conflicting`: the first version is the one kept), what its pages said of the list
    (`listings`) and of themselves (`answers`: their meta, the market listing's `meta.data_freshness` among it: when
    the service says its records are as of).

    `markets` (and the conflicting ones) are those a day from `since` on may hold (`liveness.records_from`; None:
    every one listed); `listed_per_event` counts every market listed, by its `event_id`."""

    series: list[Record]
    events: list[Record]
    markets: list[Record]
    fetched_at: datetime
    conflicting: dict[str, list[Record]] = field(default_factory=dict)
    listings: dict[str, ListFigures] = field(default_factory=dict)
    answers: dict[str, AnswerMeta] = field(default_factory=dict)
    since: date | None = None
    listed_per_event: dict[str, int] = field(default_factory=dict)

    def serves(self, day: date | None) -> bool:
        """Whether it holds every market the day (and every later one) may hold (None: any catalogue will do)."""
        return self.since is None or day is None or day >= self.since

    @property
    def markets_freshness(self) -> list[str]:
        """The `meta.data_freshness` values the market listing's pages gave, as served, sorted."""
        meta = self.answers.get("markets")
        return sorted(meta.freshness) if meta is not None else []


class CatalogueCache:
    """Catalogues on disk for `ttl_s` seconds, shared by runs and processes (a file lock per key).

    A file is a header line, then the catalogue's JSON: the header holds the catalogue's SHA-256, checked on every
    read, so that a file altered since it was written (even into other valid JSON) is not trusted, and how many
    items each list held, which bounds the next listing's pages when the service counts nothing (`listed`)."""

    def __init__(self, directory: Path, ttl_s: float, lock_timeout_s: float = Settings.lock_timeout_s) -> None:
        self.directory, self.ttl_s, self.lock_timeout_s = directory, ttl_s, lock_timeout_s

    def path(self, key: str) -> Path:
        return self.directory / f"{hashlib.sha256(key.encode()).hexdigest()[:24]}.json"

    def lock(self, key: str) -> AbstractContextManager[None]:
        """The catalogue `key`'s, held while it is listed or stored: another process listing it is awaited (it
        stores what it lists), at most PMW_LOCK_TIMEOUT_S."""
        self.directory.mkdir(parents=True, exist_ok=True)
        return held(str(self.path(key)) + ".lock", f"the catalogue {key}", self.lock_timeout_s)

    def load(self, key: str, day: date | None = None) -> Catalogue | None:
        """The cached catalogue, or None when there is none still fresh that serves the day (`Catalogue.serves`). A
        file that cannot be read as one (cut short by a full disk, edited by hand: its checksum differs) is a miss,
        logged and removed, so that the run lists afresh."""
        path = self.path(key)
        if self.ttl_s <= 0 or not path.exists():
            return None
        try:
            header, _, payload = path.read_bytes().partition(b"\n")
            if hashlib.sha256(payload).hexdigest() != orjson.loads(header)["sha256"]:
                raise ValueError("its SHA-256 is not the one written with it: altered since")
            data = orjson.loads(payload)
            fetched_at = datetime.fromisoformat(data["fetched_at"])
            catalogue = Catalogue(data["series"], data["events"], data["markets"], fetched_at, data["conflicting"],
                                  {k: ListFigures.from_json(v) for k, v in data.get("listings", {}).items()},
                                  {k: AnswerMeta.from_json(v) for k, v in data.get("answers", {}).items()},
                                  date.fromisoformat(data["since"]) if data["since"] else None,
                                  data["listed_per_event"])
        except (OSError, ValueError, TypeError, KeyError) as error:  # orjson's JSONDecodeError is a ValueError
            log.warning("catalogue cache %s is unreadable (%s); listing afresh", path, error)
            path.unlink(missing_ok=True)
            return None
        if (datetime.now(UTC) - fetched_at).total_seconds() > self.ttl_s or not catalogue.serves(day):
            return None
        return catalogue

    def listed(self, key: str) -> dict[str, int]:
        """How many items each list of the last cached catalogue held, fresh or not (its header alone is read);
        none when there is no readable header."""
        try:
            with self.path(key).open("rb") as file:
                listed = orjson.loads(file.readline())["listed"]
            return {str(name): count for name, count in listed.items() if type(count) is int}
        except (OSError, ValueError, TypeError, KeyError, AttributeError):
            return {}

    def store(self, key: str, catalogue: Catalogue) -> None:
        """Cache the catalogue; one that cannot be written as JSON (orjson refuses records nested deeper than
        254 levels) or to disk is logged and left uncached: the run goes on with the catalogue it holds."""
        path = self.path(key)
        payload = {"fetched_at": catalogue.fetched_at.isoformat(), "series": catalogue.series,
                   "events": catalogue.events, "markets": catalogue.markets, "conflicting": catalogue.conflicting,
                   "listings": {k: v.as_json() for k, v in catalogue.listings.items()},
                   "answers": {k: v.as_json() for k, v in catalogue.answers.items()},
                   "since": catalogue.since.isoformat() if catalogue.since else None,
                   "listed_per_event": catalogue.listed_per_event}
        # every item each list held (the markets' listing keeps only some), the bound of the next listing's pages
        held_lists = {"series": catalogue.series, "events": catalogue.events, "markets": catalogue.markets}
        listed = {name: figures.listed if (figures := catalogue.listings.get(name)) else len(items)
                  for name, items in held_lists.items()}
        try:
            with replaced_atomically(path) as temporary:
                body = orjson.dumps(payload)
                header = orjson.dumps({"sha256": hashlib.sha256(body).hexdigest(), "listed": listed})
                temporary.write_bytes(header + b"\n" + body)
        except (OSError, orjson.JSONEncodeError) as error:
            log.warning("catalogue not cached at %s (%s: %s)", path, type(error).__name__, error)


class _MarketsKept:
    """The market records a listing keeps as its pages stream (with the versions met again otherwise): those a
    day from `since` on may hold (all, when None), judged KEEP_BATCH records at a time (a polars call costs per
    call, not per record); and every record listed counted by its `event_id`. A page skimmed
    (market_skim.SkimmedMarkets) holds none to keep: its records are only counted."""

    def __init__(self, since: date | None) -> None:
        self.since, self.per_event = since, Counter[str]()
        self.conflicting: list[Record] = []
        self._kept: list[Record] = []
        self._pending: list[Record] = []
        self._skimmed_events: list[pa.Array] = []

    def add(self, records: list[Record] | SkimmedMarkets, conflicting: list[Record] | SkimmedMarkets) -> None:
        if isinstance(records, SkimmedMarkets):
            self._skimmed_events.append(records.event_ids)
        else:
            self.per_event.update(e for r in records if isinstance(r, dict) and isinstance(e := r.get("event_id"), str))
            self._pending += records
        if not isinstance(conflicting, SkimmedMarkets):  # a skimmed page's versions ended before `since`, as it did
            self.conflicting += conflicting
        if len(self._pending) >= KEEP_BATCH:
            self._kept += self.judged(self._pending)
            self._pending = []
            gc.collect()  # the pages the requests' cyclic garbage still holds (see cyclic_gc_per_chunk)

    def judged(self, records: list[Record]) -> list[Record]:
        return records if self.since is None or not records else records_from(records, self.since)

    def kept(self) -> tuple[list[Record], list[Record]]:
        """The records kept, and the versions met again otherwise kept."""
        self._kept += self.judged(self._pending)
        self._pending = []
        if self._skimmed_events:
            counts = pc.value_counts(pa.concat_arrays(self._skimmed_events).drop_null())
            self.per_event.update(dict(zip(counts.field("values").to_pylist(), counts.field("counts").to_pylist(),
                                           strict=True)))
            self._skimmed_events = []
        return self._kept, self.judged(self.conflicting)


class UnifiedSource:
    """Reads partitions from the unified API (or the sandbox, which speaks the same API)."""

    def __init__(self, http: HttpLayer, cache: CatalogueCache | None, cache_key: str,
                 late_s: float = Settings.trade_lateness_s) -> None:
        self.http, self.cache, self.cache_key = http, cache, cache_key
        self.answers = {"trades": AnswerMeta(), "price_history": AnswerMeta()}  # the session's answers' meta
        self.price_answers: list[PriceAnswer] = []  # the session's price-history answers whose points were kept
        self.trade_listings: dict[str, ListFigures] = {}  # per market asked, its /trades walk's figures
        self.late_s = late_s  # how late the server may record a trade (PastTheDay)
        self._catalogues: dict[str, Catalogue] = {}
        self._asked_again: dict[str, set[str]] = {}  # per platform, the markets asked for at /markets/{id}
        self._market_id_params: dict[str, MarketIdParam] = {}

    # -- catalogue ---------------------------------------------------------------------------------

    def catalogue(self, platform: str, day: date | None = None) -> Catalogue:
        """The platform's catalogue, serving the day, every later one and those of a window that ends with it
        (MAX_WINDOW_DAYS); with no day, the one the session or the cache holds (a listing afresh then keeps every
        market)."""
        held = self._catalogues.get(platform)
        if held is not None and held.serves(day):
            return held
        since = day - timedelta(days=MAX_WINDOW_DAYS - 1) if day is not None else None
        key = f"{self.cache_key}:{platform}"
        if self.cache is None:
            catalogue = self._list_catalogue(platform, since)
        else:
            with self.cache.lock(key):
                catalogue = self.cache.load(key, day)
                if catalogue is None:
                    catalogue = self._list_catalogue(platform, since, self.cache.listed(key))
                    if catalogue.listings["markets"].listed:  # an empty listing is an outage to retry, not kept
                        self.cache.store(key, catalogue)
        self._catalogues[platform] = catalogue
        return catalogue

    def _list_catalogue(self, platform: str, since: date | None, before: Mapping[str, int] | None = None
                        ) -> Catalogue:
        """Series, events and markets paged whole; of the markets, as the pages stream, only those a day from
        `since` on may hold are kept (`liveness.records_from`), and every one counted by its event. `before`: how
        many items each list held the last time, the bound of a list whose pages count nothing (page_bounds.py)."""
        fetched_at = datetime.now(UTC)
        listed: dict[str, list[Record]] = {}
        conflicting: dict[str, list[Record]] = {}
        listings = {name: ListFigures() for name in ("series", "events", "markets")}
        answers = {name: AnswerMeta() for name in listings}
        markets = _MarketsKept(since)
        with cyclic_gc_per_chunk():  # a chunk: KEEP_BATCH market records (their pages parsed, judged, let go)
            for name in listings:
                previously = (before or {}).get(name, 0)
                walk = self._walk(name, platform, since, Evidence(previously,
                                                                  f"the {previously} {name} of the previous listing"))
                listed[name], conflicting[name] = [], []
                for page in walk.pages():
                    if name == "markets":
                        markets.add(page.items, page.conflicting)
                    else:
                        listed[name] += page.items
                        conflicting[name] += page.conflicting
                    listings[name].page(page.body, len(page.items))
                    answers[name].read(page.body)
            listed["markets"], conflicting["markets"] = markets.kept()
        log.info("listed the %s catalogue: %d series, %d events, %d markets, %d of them kept (those a day from %s "
                 "may hold)", platform, len(listed["series"]), len(listed["events"]), listings["markets"].listed,
                 len(listed["markets"]), since or "any day")
        return Catalogue(listed["series"], listed["events"], listed["markets"], fetched_at, conflicting, listings,
                         answers, since, dict(markets.per_event))

    def _walk(self, name: str, platform: str, since: date | None, expected: Evidence) -> UnifiedCursor:
        """A catalogue list's walk: the markets', for a catalogue that keeps only what a day from `since` may hold,
        skims the pages of markets that ended before it (market_skim.py)."""
        options: dict[str, Any] = {"page_size": MAX_LIMIT[name], "smaller_page_size": LOWEST_DOCUMENTED_LIMIT[name],
                                   "expected": expected}
        if name == "markets" and since is not None:
            return MarketListing(self.http, f"/{name}", name, {"platform": platform}, since=since, **options)
        return UnifiedCursor(self.http, f"/{name}", name, {"platform": platform}, keys=field_keys("id"), **options)

    def market_pages(self, platform: str, day: date, last: date | None = None) -> Iterator[RawPage]:
        """The catalogue's markets live on the day (or on some day up to `last`), as one page (with the
        conflicting versions live then).

        A market whose listed record leaves it out on no evidence that cannot be stale (`liveness.unsure_records`:
        synced before the days ended, its trading may have been extended since) is asked about again, once a
        session, at `/markets/{id}`: its own record, when the service has one, takes the listed one's place (in
        the cached catalogue too). A market that no record leaves out for sure is kept: it may have traded."""
        catalogue = self._reasked(platform, day, last)
        kept = partition_records(catalogue.markets, day, last, catalogue.markets_freshness)
        yield RawPage(UNIFIED, "markets", platform, day, catalogue.fetched_at, {"markets": kept}, "markets",
                      conflicting=live_records(catalogue.conflicting.get("markets", []), day, last))

    def _reasked(self, platform: str, day: date, last: date | None) -> Catalogue:
        """The catalogue, with the records of its markets unsure for the days replaced by their own."""
        catalogue = self.catalogue(platform, day)
        asked = self._asked_again.setdefault(platform, set())
        unsure = [r["id"] for r in unsure_records(catalogue.markets, day, last, catalogue.markets_freshness)
                  if isinstance(r.get("id"), str) and r["id"] not in asked]
        asked.update(unsure)
        own = {market_id: record for market_id in unsure if (record := self._own_record(platform, market_id))}
        if unsure:
            log.info("%s: %d markets left out of %s by records synced before it ended asked for again, %d answered",
                     platform, len(unsure), f"{day}..{last or day}", len(own))
        if not own:
            return catalogue
        markets = [own.get(r["id"], r) if isinstance(r, dict) and isinstance(r.get("id"), str) else r
                   for r in catalogue.markets]
        catalogue = replace(catalogue, markets=markets)
        self._catalogues[platform] = catalogue
        if self.cache is not None:
            key = f"{self.cache_key}:{platform}"
            with self.cache.lock(key):
                self.cache.store(key, catalogue)
        return catalogue

    def _own_record(self, platform: str, market_id: str) -> Record | None:
        """The market's record at `/markets/{id}` (as `{data: Market}` or `{markets: [Market]}`), or None when the
        service has none for it (404) or answers with none of that id."""
        try:
            body = self.http.get_json(f"/markets/{quote(market_id, safe='')}", {"platform": platform})
        except ApiError as error:
            if error.status != 404:
                raise
            return None
        listed = body.get("markets") if isinstance(body, dict) else None
        found = body.get("data") if isinstance(body, dict) and not isinstance(listed, list) else None
        candidates = listed if isinstance(listed, list) else [found]
        return next((r for r in candidates if isinstance(r, dict) and r.get("id") == market_id), None)

    def member_pages(self, platform: str, day: date, kind: str, ids: set[str]) -> Iterator[RawPage]:
        """The catalogue's `events` or `series` that these ids name, as one page (with their conflicting versions).

        The spec does not say which id a market's `event_id` and `series_id` carry: an id names the event or
        series whose `id` it is, else those whose `platform_id` it is (the rule staging.stg_member_ids follows)."""
        catalogue = self.catalogue(platform, day)
        members = {"events": catalogue.events, "series": catalogue.series}[kind]
        by_platform_id = ids - {_text(m, "id") for m in members}
        wanted = [m for m in members if _text(m, "id") in ids or _text(m, "platform_id") in by_platform_id]
        conflicting = [m for m in catalogue.conflicting.get(kind, [])
                       if _text(m, "id") in ids or _text(m, "platform_id") in by_platform_id]
        yield RawPage(UNIFIED, kind, platform, day, catalogue.fetched_at, {kind: wanted}, kind, conflicting=conflicting)

    # -- trades and prices -------------------------------------------------------------------------

    def market_id_param(self, platform: str) -> MarketIdParam:
        """Whether the platform's markets are asked by their id or their platform_id, for this session."""
        return self._market_id_params.setdefault(platform, MarketIdParam())

    def trade_pages(self, platform: str, day: date, market_ids: Iterable[str], span: tuple[int, int] | None = None,
                    platform_ids: Mapping[str, str] | None = None) -> Iterator[RawPage]:
        """Each market's trades in turn, page by page, until no later page can hold a trade of the day, or of
        `span` (Unix seconds, start included, end excluded: a window of days) when given, whichever way the
        server orders them. Trades of other days come along; the caller keeps the day's.

        Polymarket's are asked `taker_only=true`: a match is then one row, its taker's, whatever the server's
        default and whether or not it says which row took (`taker`), so no match is counted once per maker.

        A market is asked by its id, or by its platform id (`platform_ids`) where the server knows it only by
        that (market_ids.py); its pages belong to it either way."""
        takers = {"taker_only": "true"} if platform == "polymarket" else {}
        start, end = span or day_bounds(day)

        def first_page(asked: list[str]) -> tuple[Iterator[Page], Page | None]:
            walk = UnifiedCursor(self.http, "/trades", "trades", {"market_id": asked[0], **takers},
                                 page_size=MAX_LIMIT["trades"], keys=field_keys("trade_id"),
                                 stop=PastTheDay(start, end, self.late_s))
            pages = walk.pages()
            return pages, next(pages, None)  # the first request, which a server that knows no such id refuses

        for market_id in market_ids:
            platform_id = (platform_ids or {}).get(market_id)
            pages, first = self.market_id_param(platform).ask([market_id], [platform_id], first_page)
            for page in chain([first] if first is not None else [], pages):
                yield RawPage(UNIFIED, "trades", platform, day, datetime.now(UTC), page.body, page.items_key,
                              (market_id,), conflicting=page.conflicting)
                self.answers["trades"].read(page.body)  # once the page is taken (the stream takes them all)
                self.trade_listings.setdefault(market_id, ListFigures()).page(page.body, len(page.items))

    def price_pages(self, platform: str, day: date, ids: Sequence[str], start: int, end: int,
                    platform_ids: Sequence[str | None] | None = None) -> Iterator[RawPage]:
        """Hourly price points of at most 10 markets between two moments (Unix seconds, both included): one
        answer, or several when one may have been cut at the cap (asked again in halves). The markets are asked
        by their ids, or by their platform ids (`platform_ids`, in the order of `ids`) where the server answers
        404 for the batch asked by id (market_ids.py)."""
        limit = MAX_LIMIT["price_history"]
        platform_ids = list(platform_ids) if platform_ids is not None else [None] * len(ids)
        body = self.market_id_param(platform).ask(ids, platform_ids, lambda asked: self.http.get_json(
            "/price-history", {"market_ids": ",".join(asked), "start_ts": start, "end_ts": end, "interval": HOURLY,
                               "limit": limit}))
        points = body.get("data") if isinstance(body, dict) else None
        if not isinstance(points, list):
            raise ApiError("GET /price-history: expected 'data' in the response")
        if len(points) >= limit and len(ids) > 1:  # possibly cut at the cap: ask again in halves
            half = len(ids) // 2
            yield from self.price_pages(platform, day, ids[:half], start, end, platform_ids[:half])
            yield from self.price_pages(platform, day, ids[half:], start, end, platform_ids[half:])
        elif len(points) >= limit and end > start:
            middle = (start + end) // 2
            yield from self.price_pages(platform, day, ids, start, middle, platform_ids)
            yield from self.price_pages(platform, day, ids, middle + 1, end, platform_ids)
        else:
            self.answers["price_history"].read(body)
            self.price_answers.append(_price_answer(body, ids, start, end))
            yield RawPage(UNIFIED, "price_history", platform, day, datetime.now(UTC), body, "data", tuple(ids))


def _text(record: Any, key: str) -> str | None:
    """A record's text field, or None (a record that is no object, a value that is no text: no id to match)."""
    value = record.get(key) if isinstance(record, dict) else None
    return value if isinstance(value, str) else None


class PastTheDay:
    """Ends a market's trade paging once no later page can hold a trade of the day (or of a window of days).

    The spec does not say in which order `/trades` pages: newest first, the last page that matters is the
    first to reach back before the day; oldest first, the first to reach past it. Nor does it say whether that
    order is the trades' times or the order the server recorded them in: a trade recorded late comes after
    trades later than itself. So the order is read from the times of the items each page brings for the first
    time (items repeated from an earlier page say nothing of the order; a page of repeats decides nothing),
    with `late_s` of slack: in newest-first order no time may exceed the earliest before it by more than
    `late_s`, in oldest-first order none may fall short of the latest before it by more. Paging stops only past
    the day by that margin too (newest first, a time before the day's start less `late_s`; oldest first, a time
    at or after its end plus `late_s`), which no trade recorded at most `late_s` late can be behind. While the
    order is not known, or if the pages are in neither order, paging reads on, to the end of the list (bounded by
    the paginator's bounds).
    """

    def __init__(self, day_start: int, day_end: int, late_s: float = Settings.trade_lateness_s) -> None:
        self.day_start, self.day_end, self.late_s = day_start, day_end, late_s
        self.newest_first = self.oldest_first = True  # the orders the times seen so far allow
        self.earliest, self.latest = np.inf, -np.inf  # of the times seen so far

    def __call__(self, fresh: list[Any]) -> bool:
        if not fresh:
            return False
        times = _times(fresh)
        if times is None:  # a time that is no number: the normalizer rejects it; judge no order on it
            return False
        earliest = np.minimum.accumulate(np.concatenate(([self.earliest], times)))[:-1]  # before each item
        latest = np.maximum.accumulate(np.concatenate(([self.latest], times)))[:-1]
        self.newest_first = self.newest_first and bool((times <= earliest + self.late_s).all())
        self.oldest_first = self.oldest_first and bool((times >= latest - self.late_s).all())
        self.earliest, self.latest = min(self.earliest, float(times.min())), max(self.latest, float(times.max()))
        if self.newest_first == self.oldest_first:  # both still possible, or neither
            return False
        if self.newest_first:
            return self.earliest < self.day_start - self.late_s
        return self.latest >= self.day_end + self.late_s


def _times(page: list[Any]) -> np.ndarray | None:
    try:
        values = np.fromiter(map(dict.get, page, repeat("timestamp")), dtype=np.float64, count=len(page))
    except (TypeError, ValueError):
        return None
    return None if np.isnan(values).any() else values


def _price_answer(body: dict[str, Any], ids: Sequence[str], start: int, end: int) -> PriceAnswer:
    """What a price-history answer said of itself (`meta.total_points`, `meta.time_range`) beside what it held."""
    meta = body.get("meta") if isinstance(body.get("meta"), dict) else {}
    span = meta.get("time_range") if isinstance(meta.get("time_range"), dict) else {}

    def number(value: Any) -> int | None:
        return value if type(value) is int else None

    return PriceAnswer(tuple(ids), start, end, len(body["data"]), number(meta.get("total_points")),
                       number(span.get("start")), number(span.get("end")))
