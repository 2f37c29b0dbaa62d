"""The process's requests and waits for the request budget, as they happen, for a reader in another thread.

Every HttpLayer adds each request it sends (and the seconds it waited for its budget first) to
`PROCESS_ACTIVITY`; a watcher such as `pmw backfill`'s progress takes snapshots at any moment and subtracts an
earlier one. The counts are the whole process's, whichever run made them; nothing here knows who reads them.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass


@dataclass(frozen=True)
class Activity:
    """Requests sent and seconds waited for a request budget, since the process started (or between two
    snapshots, once subtracted)."""

    requests: int = 0
    budget_wait_s: float = 0.0

    def __sub__(self, earlier: Activity) -> Activity:
        return Activity(self.requests - earlier.requests, self.budget_wait_s - earlier.budget_wait_s)


class ActivityCounter:
    """Thread-safe running totals: the HTTP layers add, any thread reads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._totals = Activity()

    def add_request(self, budget_wait_s: float = 0.0) -> None:
        with self._lock:
            self._totals = Activity(self._totals.requests + 1, self._totals.budget_wait_s + budget_wait_s)

    def snapshot(self) -> Activity:
        with self._lock:
            return self._totals


PROCESS_ACTIVITY = ActivityCounter()
