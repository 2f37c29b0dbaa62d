"""A request budget: a sliding window shared by every process that keeps it in the same store.

pyrate-limiter over a SQLite file with a file lock (every process of the machine), or over PostgreSQL or Redis
(every process of every host naming the server: budget_store.py), so concurrent Dagster runs together stay
inside the API's rate limit. The window is a little longer than the API's to absorb the delay between sending
and the server's clock. The bucket counts only the requests inside the window, so the requests that have left
it are purged when a budget opens and when it closes, in the caller's thread: pyrate-limiter's own background
leaker would leave a thread behind for every budget a run opens (one per asset) for the life of the process.

Each attempt is timed afresh by the store's clock, so a request is recorded at the moment it was admitted:
pyrate-limiter's own Limiter times a waiting request by its first attempt plus the sleeps it asked for, which
records it earlier than it was sent by every slow answer of the store, and lets concurrent hosts overspend.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from pyrate_limiter import Rate, RateItem

from pipeline.engine.sources.budget_store import BudgetStore

log = logging.getLogger(__name__)
T = TypeVar("T")

AFTER_WAIT_S = 0.005  # asked again this long after the store's wait, so the oldest request has left the window
RECONNECT_PAUSE_S = 0.1  # between two attempts to reach a store that is restarting


class RequestBudget:
    """At most `per_window` requests in any sliding window of `window_s` seconds (by default a minute, as the
    unified API counts; PMW_RATE_WINDOW_S), across every process using `store` (a Path: a SQLite file).

    The window is stretched by `margin_s` so that the server, which counts arrivals rather than sends,
    never sees more than `per_window` inside its own window.
    """

    def __init__(self, name: str, per_window: int, store: BudgetStore | Path, window_s: float = 60.0,
                 margin_s: float = 2.0) -> None:
        if per_window < 1:
            raise ValueError(f"a request budget needs at least 1 request per window, got {per_window}")
        if window_s <= 0:
            raise ValueError(f"a request budget needs a window longer than 0 s, got {window_s}")
        self.store = store if isinstance(store, BudgetStore) else BudgetStore(path=store)
        window_ms = int((window_s + margin_s) * 1000)
        key, rate = f"budget_{name}_{per_window}_{window_ms}", Rate(per_window, window_ms)
        self._bucket, self._disconnect = self._asking(lambda: self.store.open_bucket(key, rate))
        self.name, self.per_window, self.window_s = name, per_window, window_s
        self._lock = threading.Lock()  # a bucket keeps its last verdict between put() and waiting()
        self._purge()

    def acquire(self) -> float:
        """Block until a request may be sent; returns the seconds spent waiting. BudgetStoreError, one line
        naming the store, when the store fails or does not answer within its timeout."""
        started = time.perf_counter()
        while (wait_s := self._attempt()) > 0:
            time.sleep(wait_s)
        return time.perf_counter() - started

    def _attempt(self) -> float:
        """0 when a request is admitted now, else the seconds to wait before the next attempt."""
        with self._lock:
            return self._asking(self._ask)

    def _asking(self, call: Callable[[], T]) -> T:
        """`call` to the store, made again while the store cannot be reached (a server restarting) until its
        timeout has passed; any other failure of the store at once, as BudgetStoreError."""
        given_up_at = time.monotonic() + self.store.timeout_s
        while True:
            try:
                return call()
            except self.store.errors() as error:
                if not self.store.connection_lost(error):
                    raise self.store.failure(error) from None
                if time.monotonic() >= given_up_at:
                    raise self.store.failure(error, unreachable=True) from None
            time.sleep(RECONNECT_PAUSE_S)

    def _ask(self) -> float:
        item = RateItem(self.name, self._bucket.now())
        if self._bucket.put(item):
            return 0.0
        wait_ms = self._bucket.waiting(item)
        assert isinstance(wait_ms, int)
        return max(wait_ms, 0) / 1000 + AFTER_WAIT_S

    def close(self) -> None:
        """Purge the requests that have left the window and close the store's connection."""
        self._purge()
        self._disconnect()

    def _purge(self) -> None:
        """Housekeeping, never a reason to fail a run: a purge that finds the file busy is left to the next."""
        try:
            self._bucket.leak(self._bucket.now())
        except self.store.errors() as error:
            log.warning("request budget %s: expired requests not purged this time (%s)", self.name,
                        self.store.failure(error))
