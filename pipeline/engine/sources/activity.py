"""The process's requests and waits for the request budget, as they happen, for a reader in another thread.

Every HttpLayer counts each request it sends here (by endpoint), and times here each wait for its budget; a
watcher such as `pmw backfill`'s progress takes snapshots at any moment (a wait still under way counts up to that
moment) and subtracts an earlier one; `pmw backfill` reports a partition's requests so, those of a step that
failed included. The counts are the whole process's, whichever run made them; nothing here knows who
reads them.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Activity:
    """Requests sent and seconds waited for a request budget, since the process started (or between two
    snapshots, once subtracted)."""

    requests: int = 0
    budget_wait_s: float = 0.0
    by_endpoint: Counter[str] = field(default_factory=Counter)  # the requests, by endpoint

    def __sub__(self, earlier: Activity) -> Activity:
        return Activity(self.requests - earlier.requests, self.budget_wait_s - earlier.budget_wait_s,
                        self.by_endpoint - earlier.by_endpoint)


class ActivityCounter:
    """Thread-safe running totals: the HTTP layers add, any thread reads."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._requests = 0
        self._by_endpoint: Counter[str] = Counter()
        self._waited_s = 0.0  # the waits that have ended
        self._waiting: dict[int, float] = {}  # the waits under way: when each began
        self._tokens = itertools.count()

    def add_request(self, endpoint: str) -> None:
        with self._lock:
            self._requests += 1
            self._by_endpoint[endpoint] += 1

    @contextmanager
    def budget_wait(self) -> Iterator[None]:
        """Times the body as a wait for a request budget."""
        with self._lock:
            token = next(self._tokens)
            self._waiting[token] = self._clock()
        try:
            yield
        finally:
            with self._lock:
                self._waited_s += self._clock() - self._waiting.pop(token)

    def snapshot(self) -> Activity:
        with self._lock:
            now = self._clock()
            return Activity(self._requests, self._waited_s + sum(now - began for began in self._waiting.values()),
                            Counter(self._by_endpoint))


PROCESS_ACTIVITY = ActivityCounter()
