"""Paging: one walking loop, and one paginator class per paging style the sources meet.

`UnifiedCursor`, `KalshiCursor`, `GammaOffset` and `DataApiOffset` each walk with `Paginator.pages`, which drops
items met before, sets conflicting repeats aside, refuses loops, and fails a listing that never ends (at a
bound from evidence, page_bounds.py, else `PMW_MAX_PAGES`; `STALE_PAGES`, `EMPTY_PAGES`). The styles and the
guarantees, in docs/design.md, "Paging".
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from itertools import compress
from typing import Any

from pipeline.engine.sources.http import ApiError, HttpLayer, InvalidCursor, endpoint_of
from pipeline.engine.sources.identities import Keys, SeenKeys, fingerprints
from pipeline.engine.sources.page_bounds import Evidence, PageBound

log = logging.getLogger("pipeline.engine.sources.paging")

Stop = Callable[[list[Any]], bool]  # a page's items -> whether no later page can matter
Query = dict[str, Any]
STALE_PAGES = 50  # pages in a row of items all given before: a cursor that changes over the same items
EMPTY_PAGES = 1_000  # empty pages in a row that say there are more (a server filtering items after paging)
PROGRESS_EVERY = 500  # pages between two progress lines of one walk


@dataclass(frozen=True)
class Page:
    """One answer of a paged list: its body as received, less the items met on earlier pages; those items;
    where the body holds them (`items_key`, None when the body is the array itself); and the items set aside
    as conflicting repeats (their identity was kept before, with other values)."""

    body: Any
    items: list[Any]
    items_key: str | None
    conflicting: list[Any] = field(default_factory=list)  # items met before under their identity, now otherwise


class Paginator(ABC):
    """A paged list at `path`: `pages()` walks it, `items()` gives its items. A paging style says how to ask
    for the first and the next page, where a body holds its items, and what a loop looks like; the walking
    loop is this class's alone.

    `keys` identifies a page's items (an item it cannot identify passes through, for the normalizer to
    reject); `stop` sees each page's items and ends the walk early; `seen` may be shared by several walks
    whose items must be kept once between them (a live list and its historical twin); `expected` is what the
    caller knows of the list's size, which bounds its pages when the list counts nothing itself.
    """

    def __init__(
        self,
        http: HttpLayer,
        path: str,
        params: Mapping[str, Any] | None = None,
        *,
        keys: Keys,
        stop: Stop | None = None,
        seen: SeenKeys | None = None,
        expected: Evidence | None = None,
    ) -> None:
        self.http, self.path, self.params = http, path, dict(params or {})
        self.keys, self.stop = keys, stop
        self.seen = seen if seen is not None else SeenKeys(http.stats)
        self.expected = expected

    @property
    def endpoint(self) -> str:
        return endpoint_of(self.path)

    def pages(self) -> Iterator[Page]:
        """Every page of the list, each item once, until the API or `stop` says the list is done."""
        query: Query | None = self._first()
        asked = stale = empty = 0
        bound = PageBound(self.http.max_pages, self.expected)
        while query is not None:
            if self._beyond_reach(query):
                return
            if bound.reached(asked, query):
                raise ApiError(f"GET {self.endpoint}: {asked} pages and the server still says there are more: "
                               f"stopped at {bound.said(query)}")
            asked += 1
            if asked % PROGRESS_EVERY == 0:
                log.info("GET %s: %d pages so far, still paging", self.endpoint, asked)
            try:
                body = self._get(query)
            except ApiError as error:
                # A restart from the first page meets every page it has walked again: that many stale pages are due.
                query, stale = self._instead(error, query), -asked
                if query is not None and self._restarts(query):
                    bound.restart()
                continue
            key = self._items_key(body)
            items = body if key is None else body[key]
            bound.counted(self._total(body))
            met = self.seen.meet(self.keys(items), self._fingerprints(items))
            fresh = self._chosen(items, met.new)
            bound.brought(len(fresh))
            if items:  # an empty page neither brings nor repeats anything: its own count
                stale, empty = 0 if fresh else stale + 1, 0
            else:
                empty += 1
            if stale >= STALE_PAGES:
                raise ApiError(f"GET {self.endpoint}: {stale} pages in a row brought only items already given "
                               f"(bound {STALE_PAGES}): the cursor changes, the items do not; paging would never end")
            conflicting = self._chosen(items, met.conflicting)
            yield Page(fresh if key is None else {**body, key: fresh}, fresh, key, conflicting)
            query = self._next(query, body, items)
            if query is None or (self.stop is not None and self.stop(fresh)):
                return
            if empty >= EMPTY_PAGES:
                raise ApiError(f"GET {self.endpoint}: {empty} empty pages in a row while the server says there are "
                               f"more (bound {EMPTY_PAGES}); paging would never end")
            if self._loops(query, items):
                raise ApiError(f"GET {self.endpoint}: {self._loop_reason(query)}; paging would never end")

    def items(self) -> Iterator[Any]:
        """Every item of the list, once."""
        for page in self.pages():
            yield from page.items

    # -- how a page is read (a listing may read its pages otherwise: market_skim.py) ----------------

    def _get(self, query: Query) -> Any:
        """The answer to `query`, as parsed JSON."""
        return self.http.get_json(self.path, query)

    def _fingerprints(self, items: Any) -> Any:
        """The contents' fingerprints of a page's items (identities.fingerprints)."""
        return fingerprints(items)

    def _chosen(self, items: Any, chosen: list[bool]) -> Any:
        """The page's items where `chosen` is true."""
        return list(compress(items, chosen))

    # -- what a paging style says ------------------------------------------------------------------

    @abstractmethod
    def _first(self) -> Query:
        """The query of the first page."""

    @abstractmethod
    def _next(self, query: Query, body: Any, items: list[Any]) -> Query | None:
        """The query of the page after the one `query` asked for, or None when the list is done."""

    @abstractmethod
    def _items_key(self, body: Any) -> str | None:
        """Where a body holds its items (None: the body is the array); ApiError when it holds none."""

    @abstractmethod
    def _loops(self, query: Query, items: list[Any]) -> bool:
        """Whether asking `query` (after a page of `items`) would go round in a circle."""

    @abstractmethod
    def _loop_reason(self, query: Query) -> str:
        """What the loop `_loops` found is, for the error."""

    def _instead(self, error: ApiError, query: Query) -> Query | None:
        """What to ask instead of `query` that the server refused (None: the list ends here); by default the
        refusal stands."""
        raise error

    def _beyond_reach(self, query: Query) -> bool:
        """Whether the list ends before `query` because the API pages no deeper."""
        return False

    def _total(self, body: Any) -> int | None:
        """The list's own count of its items, when a page gives one."""
        return None

    def _restarts(self, query: Query) -> bool:
        """Whether `query`, asked instead of a refused one, walks the list again from its first page."""
        return False


class _Cursor(Paginator):
    """A cursor-paged list: a cursor given twice in one pass is a loop."""

    cursor_param = "cursor"

    def __init__(self, *arguments: Any, **options: Any) -> None:
        super().__init__(*arguments, **options)
        self._cursors: set[str] = set()

    def _loops(self, query: Query, items: list[Any]) -> bool:
        cursor = query[self.cursor_param]
        if cursor in self._cursors:
            return True
        self._cursors.add(cursor)
        return False

    def _loop_reason(self, query: Query) -> str:
        return "the server returned a cursor it had already given"

    def _restarts(self, query: Query) -> bool:
        return self.cursor_param not in query

    def _restart(self) -> Query:
        """The first page again, as a new pass."""
        self._cursors.clear()
        return self._first()


class UnifiedCursor(_Cursor):
    """The unified API's cursor paging (`limit`, `cursor`; `pagination.has_more` and `next_cursor`).

    Paging stops when either `has_more` or `next_cursor` says there is no more; a page that is short or empty
    while `has_more` is true (a server that filters items after paging) is followed, while its cursor is new, up to
    `EMPTY_PAGES` empty pages in a row. A cursor the server refuses as invalid or expired (`INVALID_CURSOR`, or a
    400 or 410 naming the cursor) restarts from the first page, at most `max_restarts` times (items met before
    are not kept twice); `smaller_page_size` is asked for instead when the server refuses `page_size`.
    """

    def __init__(
        self,
        http: HttpLayer,
        path: str,
        items_key: str,
        params: Mapping[str, Any] | None = None,
        *,
        page_size: int,
        smaller_page_size: int | None = None,
        max_restarts: int = 5,
        keys: Keys,
        stop: Stop | None = None,
        expected: Evidence | None = None,
    ) -> None:
        super().__init__(http, path, params, keys=keys, stop=stop, expected=expected)
        self.items_key, self.page_size, self.smaller_page_size = items_key, page_size, smaller_page_size
        self.max_restarts, self.restarts = max_restarts, 0

    def _first(self) -> Query:
        return {**self.params, "limit": self.page_size}

    def _items_key(self, body: Any) -> str:
        if not isinstance(body, dict) or not isinstance(body.get(self.items_key), list) or not isinstance(
                body.get("pagination"), dict):
            raise ApiError(f"GET {self.endpoint}: expected '{self.items_key}' and 'pagination' in the response")
        return self.items_key

    def _total(self, body: Any) -> int | None:
        total = body["pagination"].get("total")
        return total if type(total) is int and total > 0 else None

    def _next(self, query: Query, body: Any, items: list[Any]) -> Query | None:
        pagination = body["pagination"]
        cursor = pagination.get("next_cursor")
        if not (pagination.get("has_more") and cursor):
            return None
        return {**query, self.cursor_param: cursor}

    def _instead(self, error: ApiError, query: Query) -> Query:
        if isinstance(error, InvalidCursor) or (self.cursor_param in query and refuses_cursor(error)):
            self.restarts += 1
            self.http.stats.cursor_restarts += 1
            if self.restarts > self.max_restarts:
                raise ApiError(f"{error}; gave up after {self.max_restarts} restarts from the first page") from None
            log.info("cursor refused on %s, restarting from the first page: %s", self.endpoint, error)
            return self._restart()
        smaller = self.smaller_page_size
        if not refuses_limit(error) or smaller is None or smaller >= self.page_size:
            raise error
        log.info("%s refused limit=%d, paging at %d: %s", self.endpoint, self.page_size, smaller, error)
        self.page_size = smaller
        return {**query, "limit": smaller}


class KalshiCursor(_Cursor):
    """Kalshi's cursor paging (`limit` in the params, `cursor`; the body's `cursor` is empty on the last page)."""

    def __init__(
        self,
        http: HttpLayer,
        path: str,
        items_key: str,
        params: Mapping[str, Any] | None = None,
        *,
        keys: Keys,
        seen: SeenKeys | None = None,
    ) -> None:
        super().__init__(http, path, params, keys=keys, seen=seen)
        self.items_key = items_key

    def _first(self) -> Query:
        return dict(self.params)

    def _items_key(self, body: Any) -> str:
        if not isinstance(body, dict) or not isinstance(body.get(self.items_key), list):
            raise ApiError(f"GET {self.endpoint}: expected '{self.items_key}' in the response")
        return self.items_key

    def _next(self, query: Query, body: Any, items: list[Any]) -> Query | None:
        cursor = body.get("cursor") or ""
        return {**query, self.cursor_param: cursor} if cursor else None


class _Offset(Paginator):
    """A list paged by `limit` and `offset`: a page shorter than `limit` is the last, and a page identical to
    the one before (a server ignoring `offset`) is a loop."""

    def __init__(
        self,
        http: HttpLayer,
        path: str,
        params: Mapping[str, Any] | None = None,
        *,
        page_size: int,
        keys: Keys,
        stop: Stop | None = None,
    ) -> None:
        super().__init__(http, path, params, keys=keys, stop=stop)
        self.page_size = page_size
        self._previous: list[Any] | None = None

    def _first(self) -> Query:
        return {**self.params, "limit": self.page_size, "offset": 0}

    def _next(self, query: Query, body: Any, items: list[Any]) -> Query | None:
        return None if len(items) < self.page_size else {**query, "offset": query["offset"] + self.page_size}

    def _loops(self, query: Query, items: list[Any]) -> bool:
        repeated = bool(items) and items == self._previous
        self._previous = items
        return repeated

    def _loop_reason(self, query: Query) -> str:
        return f"the page at offset {query['offset'] - self.page_size} repeats the one before"


class GammaOffset(_Offset):
    """Gamma's offset paging of a bare array, no deeper than `max_offset`: a list that goes on past it is an
    error, since Gamma will not page to its end."""

    def __init__(
        self,
        http: HttpLayer,
        path: str,
        params: Mapping[str, Any] | None = None,
        *,
        page_size: int,
        max_offset: int,
        keys: Keys,
    ) -> None:
        super().__init__(http, path, params, page_size=page_size, keys=keys)
        self.max_offset = max_offset

    def _items_key(self, body: Any) -> None:
        if not isinstance(body, list):
            raise ApiError(f"GET {self.endpoint}: expected a JSON array, got {type(body).__name__}")
        return None

    def _beyond_reach(self, query: Query) -> bool:
        if query["offset"] > self.max_offset:
            raise ApiError(f"GET {self.endpoint}: more than {self.max_offset} items match; Gamma pages no deeper")
        return False


class DataApiOffset(_Offset):
    """The Data API's offset paging (a bare array, or the newer `{data, pagination}`), up to `cap`.

    Past the cap the API refuses to page, sometimes sooner than documented (a 400 at an offset past the
    first page): either way the list ends there and `capped` is true, for the caller to report how far it
    reached.
    """

    def __init__(
        self,
        http: HttpLayer,
        path: str,
        params: Mapping[str, Any] | None = None,
        *,
        page_size: int,
        cap: int,
        keys: Keys,
        stop: Stop | None = None,
    ) -> None:
        super().__init__(http, path, params, page_size=page_size, keys=keys, stop=stop)
        self.cap, self.capped = cap, False

    def _items_key(self, body: Any) -> str | None:
        if isinstance(body, list):
            return None
        if isinstance(body, dict) and isinstance(body.get("data"), list):
            return "data"
        raise ApiError(f"GET {self.endpoint}: expected a JSON array of trades, got {type(body).__name__}")

    def _beyond_reach(self, query: Query) -> bool:
        self.capped = query["offset"] > self.cap
        return self.capped

    def _instead(self, error: ApiError, query: Query) -> None:
        if not (query["offset"] and error.status == 400):
            raise error
        self.capped = True  # the offset cap came sooner than documented
        return None


def refuses_cursor(error: ApiError) -> bool:
    """A 400 or 410 that names the `cursor` parameter: a cursor the server no longer takes (it may say so with
    INVALID_CURSOR, a VALIDATION_ERROR naming the cursor, or 410 Gone)."""
    return error.status in (400, 410) and "cursor" in str(error).lower()


def refuses_limit(error: ApiError) -> bool:
    """A 400 that names the `limit` parameter: the server's page size is below the one asked for."""
    return error.status == 400 and not isinstance(error, InvalidCursor) and "limit" in str(error).lower()
