"""The process's running totals of requests and budget waits, which `pmw backfill`'s progress reads while a run
sends: every attempt counts, and only the waits for the budget (not the retries' backoff), live while they
last."""

from __future__ import annotations

import threading
import time
from collections import Counter

import httpx

from pipeline.engine.sources.activity import PROCESS_ACTIVITY, Activity, ActivityCounter
from pipeline.engine.sources.http import HttpLayer
from tests.support.world import FakeClock


class WaitingBudget:
    """A request budget that makes every request wait 20 ms, and sees what the process's totals say meanwhile."""

    def __init__(self) -> None:
        self.seen: list[Activity] = []

    def acquire(self) -> float:
        time.sleep(0.02)
        self.seen.append(PROCESS_ACTIVITY.snapshot())
        return 0.02

    def close(self) -> None:
        """Nothing to close."""


def test_each_attempt_and_its_budget_wait_reach_the_process_totals_while_they_happen() -> None:
    answers = iter([httpx.Response(429, headers={"Retry-After": "2"}), httpx.Response(200, json={})])
    budget = WaitingBudget()
    layer = HttpLayer("http://api.test", budget=budget,  # type: ignore[arg-type]
                      transport=httpx.MockTransport(lambda _request: next(answers)), sleep=lambda _s: None)
    before = PROCESS_ACTIVITY.snapshot()
    layer.get_json("/markets")
    spent = PROCESS_ACTIVITY.snapshot() - before
    assert spent.requests == 2 and spent.by_endpoint == {"/markets": 2}
    assert 0.04 <= spent.budget_wait_s < 1.0, "the budget's waits, not the 2 s backoff"
    during_the_first_wait = budget.seen[0] - before
    assert during_the_first_wait.requests == 0
    assert during_the_first_wait.budget_wait_s >= 0.02, "a wait under way counts before it ends"
    assert layer.stats.waited_s >= 2.0, "the layer's own count of seconds waited holds the backoff too"


def test_a_wait_counts_up_to_each_snapshot_and_ends_where_it_ended(clock: FakeClock) -> None:
    counter = ActivityCounter(clock)
    with counter.budget_wait():
        clock.advance(3.0)
        assert counter.snapshot() == Activity(0, 3.0)
        clock.advance(1.5)
    counter.add_request("/markets")
    clock.advance(10.0)
    assert counter.snapshot() == Activity(1, 4.5, Counter({"/markets": 1}))


def test_totals_added_from_many_threads_lose_nothing() -> None:
    counter = ActivityCounter()

    def add() -> None:
        for _ in range(2_000):
            counter.add_request("/trades")

    threads = [threading.Thread(target=add) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert counter.snapshot().requests == 8_000 and counter.snapshot().by_endpoint == {"/trades": 8_000}
