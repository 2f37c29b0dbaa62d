"""The HTTP layer every source is built on: auth, a machine-wide request budget, retries, cursor paging.

- Authentication: the key travels in a header and nowhere else; any text that could echo it (an error body,
  an exception) is redacted before it reaches a log line, an exception message or metadata.
- Budget: each request first takes its place in the host's RequestBudget (request_budget.py), shared by
  every process on the machine.
- Retries (tenacity): 429, 5xx, timeouts, dropped connections and unreadable bodies are retried with
  exponential backoff and full jitter, honouring `Retry-After` (header or Error `details.retry_after`).
- Paging: cursor iteration at the largest page size, restarting from the first page when the server
  says a cursor is invalid or expired, dropping items already seen, and refusing cursors that loop.
- Counters: requests (per endpoint), retries, seconds waited, 429s, duplicates and restarts, for metadata.
"""

from __future__ import annotations

import email.utils
import logging
import random
import time
from collections import Counter
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import httpx
import numpy as np
import orjson
import polars as pl
from tenacity import RetryCallState, Retrying, retry_if_exception_type, stop_after_attempt

from pipeline.engine.config import Secret
from pipeline.engine.sources.request_budget import RequestBudget

log = logging.getLogger("pipeline.http")
REDACTED = "***"


class ApiError(Exception):
    """The API refused a request, or kept failing after every retry. The message never holds the key."""

    def __init__(self, message: str, status: int | None = None, code: str | None = None) -> None:
        super().__init__(message)
        self.status, self.code = status, code


class InvalidCursor(ApiError):
    """The server no longer accepts a cursor (expired, or issued for other filters)."""


class _Transient(Exception):
    """A failure worth retrying; `retry_after` is the server's hint in seconds, if it gave one."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


@dataclass
class RequestStats:
    requests: int = 0
    retries: int = 0
    waited_s: float = 0.0
    rate_limited: int = 0
    duplicates_dropped: int = 0
    cursor_restarts: int = 0
    by_endpoint: Counter[str] = field(default_factory=Counter)

    def snapshot(self) -> RequestStats:
        return RequestStats(self.requests, self.retries, self.waited_s, self.rate_limited,
                            self.duplicates_dropped, self.cursor_restarts, Counter(self.by_endpoint))

    def since(self, earlier: RequestStats) -> RequestStats:
        """What happened between `earlier` (a snapshot) and now."""
        return RequestStats(
            self.requests - earlier.requests,
            self.retries - earlier.retries,
            round(self.waited_s - earlier.waited_s, 3),
            self.rate_limited - earlier.rate_limited,
            self.duplicates_dropped - earlier.duplicates_dropped,
            self.cursor_restarts - earlier.cursor_restarts,
            self.by_endpoint - earlier.by_endpoint,
        )

    def as_metadata(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "retries": self.retries,
            "seconds_waited": round(self.waited_s, 3),
            "rate_limited_answers": self.rate_limited,
            "duplicates_dropped": self.duplicates_dropped,
            "cursor_restarts": self.cursor_restarts,
            "requests_by_endpoint": dict(sorted(self.by_endpoint.items())),
        }


_COLLECTIONS = frozenset({"events", "markets", "series"})  # a segment after one of these is an id ...
_NOT_IDS = frozenset({"trades", "candlesticks", "orderbook", "keyset"})  # ... unless it names a sub-resource


def endpoint_of(path: str) -> str:
    """`/markets/KX-1/orderbook` -> `/markets/{id}/orderbook`: counters group by endpoint, not by id."""
    parts = [p for p in path.split("/") if p]
    named = [
        "{id}" if i and parts[i - 1] in _COLLECTIONS and part not in _NOT_IDS else part for i, part in enumerate(parts)
    ]
    return "/" + "/".join(named)


def _retry_after_seconds(response: httpx.Response, body: Any) -> float | None:
    header = response.headers.get("retry-after")
    if header:
        try:
            return max(0.0, float(header))
        except ValueError:
            moment = email.utils.parsedate_to_datetime(header)
            if moment is not None:
                return max(0.0, (moment - datetime.now(UTC)).total_seconds())
    if isinstance(body, dict):
        details = (body.get("error") or {}).get("details") if isinstance(body.get("error"), dict) else None
        if isinstance(details, dict) and isinstance(details.get("retry_after"), int | float):
            return float(details["retry_after"])
    return None


class HttpLayer:
    """A JSON-over-HTTP client with budget, retries and paging; one per API and run."""

    def __init__(
        self,
        base_url: str,
        *,
        api_key: Secret | None = None,
        key_header: str = "X-API-Key",
        budget: RequestBudget | None = None,
        transport: httpx.BaseTransport | None = None,
        timeout_s: float = 30.0,
        max_attempts: int = 8,
        max_backoff_s: float = 60.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        headers = {"User-Agent": "pm-warehouse", "Accept": "application/json"}
        if api_key is not None:
            headers[key_header] = api_key.value
        self._secret = api_key.value if api_key is not None else None
        self._client = httpx.Client(base_url=base_url, headers=headers, timeout=timeout_s, transport=transport)
        self.budget = budget
        self.stats = RequestStats()
        self._max_attempts, self._max_backoff_s, self._sleep = max_attempts, max_backoff_s, sleep

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> HttpLayer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def redact(self, text: str) -> str:
        return text.replace(self._secret, REDACTED) if self._secret else text

    # -- single requests ---------------------------------------------------------------------------

    def get_json(self, path: str, params: Mapping[str, Any] | Sequence[tuple[str, Any]] | None = None) -> Any:
        """GET a JSON document, retrying transient failures; ApiError when it cannot be had.

        `params` may repeat a key when given as pairs (Gamma's `id=1&id=2`).
        """
        retrying = Retrying(
            stop=stop_after_attempt(self._max_attempts),
            wait=self._wait,
            retry=retry_if_exception_type(_Transient),
            before_sleep=self._before_sleep,
            sleep=self._sleep,
            reraise=True,
        )
        try:
            query = list(params.items()) if isinstance(params, Mapping) else list(params or ())
            return retrying(self._attempt, path, query)
        except _Transient as error:
            raise ApiError(
                f"GET {endpoint_of(path)} failed after {self._max_attempts} attempts: {error}"
            ) from None

    def _attempt(self, path: str, params: list[tuple[str, Any]]) -> Any:
        if self.budget is not None:
            self.stats.waited_s += self.budget.acquire()
        self.stats.requests += 1
        self.stats.by_endpoint[endpoint_of(path)] += 1
        try:
            response = self._client.get(path, params=params)
        except httpx.TimeoutException as error:
            raise _Transient(f"timed out ({type(error).__name__})") from None
        except httpx.TransportError as error:
            raise _Transient(f"connection failed: {self.redact(str(error))[:200]}") from None
        return self._read(path, response)

    def _read(self, path: str, response: httpx.Response) -> Any:
        try:
            body = orjson.loads(response.content)
        except orjson.JSONDecodeError:
            body = None
        status = response.status_code
        if status == 429:
            self.stats.rate_limited += 1
            raise _Transient("429 rate limited", _retry_after_seconds(response, body))
        if status >= 500:
            raise _Transient(f"{status} {self._error_text(response, body)}", _retry_after_seconds(response, body))
        if status >= 400:
            code, message = self._error_fields(body)
            text = f"GET {endpoint_of(path)} answered {status} {code or ''}: {message or self._snippet(response)}"
            if code == "INVALID_CURSOR":
                raise InvalidCursor(text, status, code)
            raise ApiError(text, status, code)
        if body is None:
            kind = response.headers.get("content-type", "unknown content type")
            raise _Transient(f"unreadable JSON body ({kind}, {len(response.content)} bytes)")
        return body

    def _error_fields(self, body: Any) -> tuple[str | None, str | None]:
        error = body.get("error") if isinstance(body, dict) else None
        if not isinstance(error, dict):
            return None, None
        code, message = error.get("code"), error.get("message")
        return (str(code) if code is not None else None,
                self.redact(str(message))[:300] if message is not None else None)

    def _error_text(self, response: httpx.Response, body: Any) -> str:
        code, message = self._error_fields(body)
        return f"{code}: {message}" if code else self._snippet(response)

    def _snippet(self, response: httpx.Response) -> str:
        return self.redact(response.text[:120].replace("\n", " "))

    def _wait(self, state: RetryCallState) -> float:
        error = state.outcome.exception() if state.outcome else None
        hint = getattr(error, "retry_after", None)
        if hint is not None:
            return min(self._max_backoff_s, hint + random.uniform(0, 0.25))
        ceiling = min(self._max_backoff_s, 0.5 * 2 ** (state.attempt_number - 1))
        return random.uniform(0, ceiling)  # full jitter

    def _before_sleep(self, state: RetryCallState) -> None:
        seconds = state.next_action.sleep if state.next_action else 0.0
        self.stats.retries += 1
        self.stats.waited_s += seconds
        error = state.outcome.exception() if state.outcome else None
        log.info("retrying in %.1f s after attempt %d: %s", seconds, state.attempt_number, error)

    # -- paging ------------------------------------------------------------------------------------

    def paginate(
        self,
        path: str,
        items_key: str,
        params: Mapping[str, Any],
        *,
        page_size: int,
        key: Callable[[Any], Hashable | None],
        stop: Callable[[list[Any]], bool] | None = None,
        max_restarts: int = 5,
        smaller_page_size: int | None = None,
    ) -> Iterator[Any]:
        """Every item of a cursor-paginated list, once.

        `key` identifies an item (items it cannot identify pass through, for the normaliser to reject);
        `stop` sees each raw page and ends paging early when the rest cannot matter; `smaller_page_size` is
        asked for instead when the server refuses `page_size` (a 400 naming `limit`).
        """
        seen = SeenKeys(self.stats)
        restarts = 0
        cursor: str | None = None
        cursors_this_pass: set[str] = set()
        while True:
            query = {**params, "limit": page_size, **({"cursor": cursor} if cursor else {})}
            try:
                body = self.get_json(path, query)
            except InvalidCursor as error:
                restarts += 1
                self.stats.cursor_restarts += 1
                if restarts > max_restarts:
                    raise ApiError(f"{error}; gave up after {max_restarts} restarts from the first page") from None
                log.info("cursor refused on %s, restarting from the first page: %s", endpoint_of(path), error)
                cursor, cursors_this_pass = None, set()
                continue
            except ApiError as error:
                if not _refuses_limit(error) or smaller_page_size is None or smaller_page_size >= page_size:
                    raise
                log.info("%s refused limit=%d, paging at %d: %s", endpoint_of(path), page_size, smaller_page_size,
                         error)
                page_size = smaller_page_size
                continue
            items, pagination = self._page_parts(path, body, items_key)
            first_time = seen.new([_safe_key(key, item) for item in items])
            yield from (item for item, new in zip(items, first_time, strict=True) if new)
            next_cursor = pagination.get("next_cursor")
            more = bool(pagination.get("has_more")) and bool(next_cursor)
            if more and not items:  # before `stop`, which would take an empty page for the end of the data
                raise ApiError(f"GET {endpoint_of(path)}: has_more is true but the page is empty")
            if not more or (stop is not None and stop(items)):
                return
            if next_cursor in cursors_this_pass:
                raise ApiError(f"GET {endpoint_of(path)}: the server returned a cursor it had already given; "
                               "paging would never end")
            cursors_this_pass.add(next_cursor)
            cursor = next_cursor

    @staticmethod
    def _page_parts(path: str, body: Any, items_key: str) -> tuple[list[Any], dict[str, Any]]:
        items = body.get(items_key) if isinstance(body, dict) else None
        pagination = body.get("pagination") if isinstance(body, dict) else None
        if not isinstance(items, list) or not isinstance(pagination, dict):
            raise ApiError(f"GET {endpoint_of(path)}: expected '{items_key}' and 'pagination' in the response")
        return items, pagination


class SeenKeys:
    """The identities of the items paging has kept so far, to drop the ones it meets again (after a cursor
    restart, or when pages overlap), with the counter. Text identities (a trade id) are kept as two 64-bit
    hashes, 16 bytes each where a Python set of the strings took over 150 (a busy market has millions: 298 MB
    for 1.9 M ids, most of the memory benchmark's excess over 1 GB), in sorted runs merged as they grow and
    looked up by binary search; a repeat is one whose 128 bits match. Other identities (numbers) go to a set.
    """

    def __init__(self, stats: RequestStats) -> None:
        self.stats = stats
        self._runs: list[tuple[np.ndarray, np.ndarray]] = []
        self._others: set[Hashable] = set()

    def new(self, identities: list[Hashable | None]) -> list[bool]:
        """Per item, whether it is met for the first time (always, when it has no identity); remembers them."""
        texts = pl.Series([i if type(i) is str else None for i in identities], dtype=pl.String())
        keep = self._new_texts(texts).to_list()
        for position, identity in enumerate(identities):
            if identity is not None and type(identity) is not str:
                keep[position] = identity not in self._others
                self._others.add(identity)
        self.stats.duplicates_dropped += keep.count(False)
        return keep

    def _new_texts(self, texts: pl.Series) -> pl.Series:
        hashed = texts.to_frame("id").select(  # one polars call a page: its cost is per call, not per item
            pl.col("id").hash(seed=0).alias("a"),
            pl.col("id").hash(seed=1).alias("b"),
            (pl.col("id").is_first_distinct() | pl.col("id").is_null()).alias("first"),
            pl.col("id").is_not_null().alias("known"),
        )
        a, b, known = hashed["a"].to_numpy(), hashed["b"].to_numpy(), hashed["known"].to_numpy()
        repeat = np.zeros(len(texts), dtype=bool)
        for run_a, run_b in self._runs:
            at = np.minimum(np.searchsorted(run_a, a), len(run_a) - 1)
            repeat |= (run_a[at] == a) & (run_b[at] == b)
        keep = hashed["first"].to_numpy() & ~(repeat & known)
        added = keep & known
        self._add(a[added], b[added])
        return pl.Series(keep)

    def _add(self, a: np.ndarray, b: np.ndarray) -> None:
        if not len(a):
            return
        order = np.argsort(a, kind="stable")
        self._runs.append((a[order], b[order]))
        while len(self._runs) > 1 and len(self._runs[-2][0]) <= 2 * len(self._runs[-1][0]):
            (a1, b1), (a2, b2) = self._runs.pop(), self._runs.pop()
            a, b = np.concatenate([a2, a1]), np.concatenate([b2, b1])
            order = np.argsort(a, kind="stable")
            self._runs.append((a[order], b[order]))


def _refuses_limit(error: ApiError) -> bool:
    """A 400 that names the `limit` parameter: the server's page size is below the one asked for."""
    return error.status == 400 and not isinstance(error, InvalidCursor) and "limit" in str(error).lower()


def _safe_key(key: Callable[[Any], Hashable | None], item: Any) -> Hashable | None:
    """The item's identity, or None when it has none usable (missing, or not hashable)."""
    try:
        identity = key(item)
        hash(identity)
    except (KeyError, TypeError, IndexError):
        return None
    return identity
