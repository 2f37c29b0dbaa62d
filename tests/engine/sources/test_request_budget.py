"""The unified API's request budget counts in the configured window (PMW_RATE_WINDOW_S, a minute by default)."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

import pytest
from pyrate_limiter import RateItem

from pipeline.engine.config import Secret, Settings
from pipeline.engine.schema import Source
from pipeline.engine.sources.factory import open_unified_source
from pipeline.engine.sources.request_budget import RequestBudget


def _api_settings(tmp_path: Path, **changes: object) -> Settings:
    return Settings(source=Source.API, api_url="http://api.test", api_key=Secret("sk-test"), data_dir=tmp_path / "data",
                    rate_limit_db=tmp_path / "budget.sqlite", **changes)  # type: ignore[arg-type]


def test_the_unified_budget_counts_in_the_configured_window(tmp_path: Path) -> None:
    with open_unified_source(_api_settings(tmp_path)) as source:
        assert source.http.budget is not None
        assert (source.http.budget.per_window, source.http.budget.window_s) == (100, 60.0)  # the API's own
    with open_unified_source(_api_settings(tmp_path, rate_limit_per_min=7, rate_window_s=6.0)) as source:
        assert source.http.budget is not None
        assert (source.http.budget.per_window, source.http.budget.window_s) == (7, 6.0)
    assert Settings.from_env({"PMW_RATE_WINDOW_S": "6"}).rate_window_s == 6.0
    assert Settings.from_env({}).rate_window_s == 60.0


def test_a_full_budget_waits_out_its_window_and_margin(tmp_path: Path) -> None:
    budget = RequestBudget("short", 3, tmp_path / "budget.sqlite", window_s=0.5, margin_s=0.1)
    started = time.perf_counter()
    waits = [budget.acquire() for _ in range(4)]
    assert waits[3] > 0  # the fourth request waits for the first to leave the window and its margin
    assert time.perf_counter() - started >= 0.5 + 0.1


def _most_in_any_window(times: list[float], window_s: float) -> int:
    times = sorted(times)
    return max(sum(1 for t in times[i:] if t < start + window_s) for i, start in enumerate(times))


def test_a_request_that_waited_is_recorded_when_it_was_admitted_not_when_it_began_to_wait(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store that answers slowly now and then (here every other verdict takes 0.25 s to read, as a loaded
    server): a request recorded at its first attempt plus its sleeps would be recorded earlier than it was sent by
    as long as the store kept it, leave the window early, and let the next requests through too soon. Timed as
    the requests are sent, no window ever holds more than the budget (counted in windows 0.1 s shorter than the
    budget's, for the time between the budget's answer and the test's reading of the clock on a busy machine)."""
    budget = RequestBudget("slow", 2, tmp_path / "budget.sqlite", window_s=0.3, margin_s=0.0)
    answers, calls = budget._bucket.waiting, iter(range(1000))

    def slow_answer(item: RateItem) -> int:
        if next(calls) % 2:
            time.sleep(0.25)
        return answers(item)

    monkeypatch.setattr(budget._bucket, "waiting", slow_answer)
    sent = []
    for _ in range(7):
        budget.acquire()
        sent.append(time.monotonic())
    budget.close()
    assert _most_in_any_window(sent, 0.3 - 0.1) <= 2


def test_a_budget_refuses_an_empty_window(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="longer than 0 s"):
        RequestBudget("x", 1, tmp_path / "b.sqlite", window_s=0)


def test_a_budget_runs_no_thread_and_purges_what_left_the_window(tmp_path: Path) -> None:
    """A run opens a budget per asset: a thread per budget (pyrate-limiter's background leaker) would gather by
    the hundred in a long-lived process. Requests that left the window are purged when a budget opens or closes."""
    threads = threading.active_count()
    first = RequestBudget("purged", 5, tmp_path / "budget.sqlite", window_s=0.2, margin_s=0.0)
    for _ in range(3):
        first.acquire()
    assert threading.active_count() == threads
    assert first._bucket.count() == 3
    time.sleep(0.25)
    first.close()
    second = RequestBudget("purged", 5, tmp_path / "budget.sqlite", window_s=0.2, margin_s=0.0)
    assert second._bucket.count() == 0
    second.close()


def test_a_purge_that_finds_the_file_busy_never_fails_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    budget = RequestBudget("busy", 5, tmp_path / "budget.sqlite")

    def busy(_now: int) -> int:
        raise sqlite3.OperationalError("database is locked")

    monkeypatch.setattr(budget._bucket, "leak", busy)
    budget.acquire()
    budget.close()
    assert "expired requests not purged this time (the request budget's store" in caplog.text
    assert "failed: OperationalError: database is locked)" in caplog.text
