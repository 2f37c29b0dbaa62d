"""The HTTP layer every source is built on: auth, a machine-wide request budget, retries, counters.

- Authentication: the key travels in a header and nowhere else; any text that could echo it (an error body,
  an exception) is redacted (redaction.py: the key whole, URL-encoded or in pieces, before any cut) before it
  reaches a log line, an exception message or metadata.
- Budget: each request first takes its place in the host's RequestBudget (request_budget.py), shared by
  every process on the machine.
- Retries (tenacity): 429, 5xx, timeouts, dropped connections and unreadable bodies are retried with exponential
  backoff and full jitter, honouring `Retry-After`; a request past its whole deadline (deadline.py) is not.
- Redirects: one to the API's own origin (scheme, host, port) is followed, at most MAX_REDIRECTS in a row, each
  hop a request of its own (budget and counters); any other is an error naming its status and Location, so that
  the key never goes to another origin (httpx's own following would carry the key's header along).
- Counters: requests (per endpoint), retries, seconds waited, 429s, and the duplicates (plain and
  conflicting) and cursor restarts that paging (paging.py) meets, for metadata; each request, and each wait
  for the budget as it runs, also go to the process's running totals (activity.py), for a watcher to read.
"""

from __future__ import annotations

import email.utils
import functools
import logging
import random
import ssl
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from typing import Any

import httpx
import orjson
from tenacity import RetryCallState, Retrying, retry_if_exception_type, stop_after_attempt

from pipeline.engine.config import Secret
from pipeline.engine.sources.activity import PROCESS_ACTIVITY
from pipeline.engine.sources.deadline import ANSWER, DeadlinePassed, RequestClock, deadline_transport
from pipeline.engine.sources.redaction import Redactor
from pipeline.engine.sources.request_budget import RequestBudget

log = logging.getLogger("pipeline.http")


MIB = 1 << 20
MAX_REDIRECTS = 5  # same-origin redirects followed in a row

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
    duplicates_dropped: int = 0  # items met again as they were
    conflicting_repeats: int = 0  # items met again under a kept identity, with other values
    cursor_restarts: int = 0
    by_endpoint: Counter[str] = field(default_factory=Counter)

    def snapshot(self) -> RequestStats:
        return RequestStats(self.requests, self.retries, self.waited_s, self.rate_limited,
                            self.duplicates_dropped, self.conflicting_repeats, self.cursor_restarts,
                            Counter(self.by_endpoint))

    def as_metadata(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "retries": self.retries,
            "seconds_waited": round(self.waited_s, 3),
            "rate_limited_answers": self.rate_limited,
            "duplicates_dropped": self.duplicates_dropped,
            "conflicting_repeats": self.conflicting_repeats,
            "cursor_restarts": self.cursor_restarts,
            "requests_by_endpoint": dict(sorted(self.by_endpoint.items())),
        }


# A segment after one of these is an id ...
_COLLECTIONS = frozenset({"events", "markets", "series", "futures", "awards"})
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


@functools.cache
def tls_context() -> ssl.SSLContext:
    """The process's one verifying TLS context (httpx's defaults, SSL_CERT_FILE and SSL_CERT_DIR honoured).

    Loading the CA bundle costs about 30 ms, and a partition opens several clients; a context is safe to
    share between clients and threads.
    """
    return httpx.create_ssl_context()


class HttpLayer:
    """A JSON-over-HTTP client with budget and retries; one per API and run. Paging is paging.py's."""

    def __init__(
        self,
        base_url: str,
        *,
        api_key: Secret | None = None,
        key_header: str = "X-API-Key",
        budget: RequestBudget | None = None,
        transport: httpx.BaseTransport | None = None,
        timeout_s: float = 30.0,
        deadline_s: float = 120.0,
        max_body_bytes: int = 64 * MIB,
        max_attempts: int = 8,
        max_backoff_s: float = 60.0,
        max_pages: int = 20_000,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        headers = {"User-Agent": "pm-warehouse", "Accept": "application/json"}
        if api_key is not None:
            headers[key_header] = api_key.value
        self.redact = Redactor(api_key.value if api_key is not None else None)
        self._clock = RequestClock()
        self._client = httpx.Client(base_url=base_url, headers=headers, timeout=timeout_s,
                                    transport=transport or deadline_transport(self._clock, tls_context(), base_url))
        self.budget = budget
        self.stats = RequestStats()
        self._max_attempts, self._max_backoff_s, self._sleep = max_attempts, max_backoff_s, sleep
        self._deadline_s, self._max_body_bytes = deadline_s, max_body_bytes
        self.max_pages = max_pages  # the most pages one listing may take (PMW_MAX_PAGES); paging.py enforces it

    def close(self) -> None:
        """Close the connection pool and the request budget (the budget is the layer's own: one per API and run)."""
        self._client.close()
        if self.budget is not None:
            self.budget.close()

    def __enter__(self) -> HttpLayer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- single requests ---------------------------------------------------------------------------

    def get_json(self, path: str, params: Mapping[str, Any] | Sequence[tuple[str, Any]] | None = None,
                 read: Callable[[bytes], Any] = orjson.loads) -> Any:
        """GET a JSON document, retrying transient failures; ApiError when it cannot be had.

        `params` may repeat a key when given as pairs (Gamma's `id=1&id=2`). `read` reads a successful answer's
        body (by default as Python objects; it raises orjson's JSONDecodeError on a body that is no JSON).
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
            return retrying(self._attempt, path, query, read)
        except _Transient as error:
            raise ApiError(
                f"GET {endpoint_of(path)} failed after {self._max_attempts} attempts: {error}"
            ) from None

    def _attempt(self, path: str, params: list[tuple[str, Any]], read: Callable[[bytes], Any]) -> Any:
        """One try: the request, and the same-origin redirects it is answered with, each a request of its own."""
        url: str | httpx.URL = path
        query: list[tuple[str, Any]] | None = params
        hops = 0
        while True:
            if self.budget is not None:
                with PROCESS_ACTIVITY.budget_wait():
                    self.stats.waited_s += self.budget.acquire()
            self.stats.requests += 1
            PROCESS_ACTIVITY.add_request(endpoint_of(path))
            self.stats.by_endpoint[endpoint_of(path)] += 1
            awaited = "the status line and headers"
            try:
                with self._clock.running(self._deadline_s), self._client.stream("GET", url, params=query) as response:
                    if response.has_redirect_location:
                        url, query = self._redirect(path, response, hops), None  # the Location holds the query
                        hops += 1
                        continue
                    awaited = "the body"
                    content = self._content(path, response)
            except DeadlinePassed as passed:
                raise self._late(path, awaited if passed.awaited == ANSWER else passed.awaited) from None
            except httpx.TimeoutException as error:
                raise _Transient(f"timed out ({type(error).__name__})") from None
            except httpx.TransportError as error:
                raise _Transient(f"connection failed: {self.redact(str(error), limit=200)}") from None
            return self._read(path, response, content, read)

    def _redirect(self, path: str, response: httpx.Response, hops: int) -> httpx.URL:
        """Where a redirect leads, when it is to be followed: on the API's own origin (scheme, host and port),
        the key being for that origin alone, and at most MAX_REDIRECTS in a row; ApiError naming the status and
        the Location otherwise."""
        target = response.url.join(response.headers["location"])
        said = f"GET {endpoint_of(path)} answered {response.status_code} to {self.redact(str(target), limit=300)}"
        base = self._client.base_url
        if (target.scheme, target.host, target.port) != (base.scheme, base.host, base.port):
            raise ApiError(f"{said}: another origin than {base.scheme}://{base.netloc.decode()}, not followed "
                           f"(the API key goes to the API's origin only)", response.status_code)
        if hops == MAX_REDIRECTS:
            raise ApiError(f"{said}: {MAX_REDIRECTS} redirects in a row, not followed further", response.status_code)
        log.info("%s: following", said)
        return target

    def _content(self, path: str, response: httpx.Response) -> bytes:
        """The decoded body, read as it arrives: refused past `max_body_bytes` (a page inflating to gigabytes
        must not take the memory with it, once per retry) and past the request's deadline (the sockets obey it;
        this check bounds a transport without sockets, such as the emulator's, too)."""
        chunks, size = [], 0
        for chunk in response.iter_bytes():
            size += len(chunk)
            if size > self._max_body_bytes:
                raise ApiError(f"GET {endpoint_of(path)} answered a body of more than {self._max_body_bytes:,} bytes "
                               f"(PMW_MAX_BODY_MB): refused after reading {size:,}")
            if self._clock.passed():
                raise self._late(path, f"the body ({size:,} bytes read)")
            chunks.append(chunk)
        return b"".join(chunks)

    def _late(self, path: str, awaited: str) -> ApiError:
        """A request past its deadline: not tried again (a server that slow holds each try as long)."""
        return ApiError(f"GET {self.redact(path, limit=200)}: no whole answer within the deadline of "
                        f"{self._deadline_s:g} s (PMW_HTTP_DEADLINE_S), still waiting for {awaited}")

    def _read(self, path: str, response: httpx.Response, content: bytes, read: Callable[[bytes], Any]) -> Any:
        status = response.status_code
        try:
            body = (read if 200 <= status < 300 else orjson.loads)(content)
        except orjson.JSONDecodeError:
            body = None
        if status == 429:
            self.stats.rate_limited += 1
            raise _Transient("429 rate limited", _retry_after_seconds(response, body))
        if status >= 500:
            raise _Transient(f"{status} {self._error_text(content, body)}", _retry_after_seconds(response, body))
        if 300 <= status < 400:
            raise ApiError(f"GET {endpoint_of(path)} answered {status} without a Location to follow", status)
        if status >= 400:
            code, message = self._error_fields(body)
            text = f"GET {endpoint_of(path)} answered {status} {code or ''}: {message or self._snippet(content)}"
            if code == "INVALID_CURSOR":
                raise InvalidCursor(text, status, code)
            raise ApiError(text, status, code)
        if body is None:
            kind = response.headers.get("content-type", "unknown content type")
            raise _Transient(f"unreadable JSON body ({kind}, {len(content)} bytes)")
        return body

    def _error_fields(self, body: Any) -> tuple[str | None, str | None]:
        error = body.get("error") if isinstance(body, dict) else None
        if not isinstance(error, dict):
            return None, None
        code, message = error.get("code"), error.get("message")
        return (str(code) if code is not None else None,
                self.redact(str(message), limit=300) if message is not None else None)

    def _error_text(self, content: bytes, body: Any) -> str:
        code, message = self._error_fields(body)
        return f"{code}: {message}" if code else self._snippet(content)

    def _snippet(self, content: bytes) -> str:
        return self.redact(content.decode("utf-8", errors="replace"), limit=120).replace("\n", " ")

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


def combined(stats: list[RequestStats]) -> RequestStats:
    """The request counters of several HTTP layers (one per host) as one."""
    total = RequestStats(by_endpoint=Counter())
    for one in stats:
        for item in fields(RequestStats):
            setattr(total, item.name, getattr(total, item.name) + getattr(one, item.name))
    return total
