"""The process's running totals of requests and budget waits, which `pmw backfill`'s progress reads while a run
sends: every attempt counts, and only the waits for the budget (not the retries' backoff)."""

from __future__ import annotations

import threading

import httpx

from pipeline.engine.sources.activity import PROCESS_ACTIVITY, Activity, ActivityCounter
from pipeline.engine.sources.http import HttpLayer


class WaitingBudget:
    """A request budget that makes every request wait 1.5 s (said, not slept)."""

    def acquire(self) -> float:
        return 1.5

    def close(self) -> None:
        """Nothing to close."""


def test_each_attempt_and_its_budget_wait_reach_the_process_totals() -> None:
    answers = iter([httpx.Response(429, headers={"Retry-After": "2"}), httpx.Response(200, json={})])
    layer = HttpLayer("http://api.test", budget=WaitingBudget(),  # type: ignore[arg-type]
                      transport=httpx.MockTransport(lambda _request: next(answers)), sleep=lambda _s: None)
    before = PROCESS_ACTIVITY.snapshot()
    layer.get_json("/markets")
    assert PROCESS_ACTIVITY.snapshot() - before == Activity(requests=2, budget_wait_s=3.0)
    assert layer.stats.waited_s >= 5.0, "the layer's own count of seconds waited holds the 2 s backoff too"


def test_totals_added_from_many_threads_lose_nothing() -> None:
    counter = ActivityCounter()

    def add() -> None:
        for _ in range(2_000):
            counter.add_request(0.5)

    threads = [threading.Thread(target=add) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert counter.snapshot() == Activity(requests=8_000, budget_wait_s=4_000.0)
