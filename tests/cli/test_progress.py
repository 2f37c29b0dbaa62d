"""`pmw backfill`'s progress, piece by piece: the estimate, the plain lines, the terminal's status line, and the
thread that refreshes them; no Dagster run here (test_backfill_progress.py drives a backfill)."""

from __future__ import annotations

import io
import logging
import time
from datetime import date

import pytest

from pipeline.cli.backfill.progress import (
    TERMINAL_REFRESH_S,
    Estimate,
    PlainLines,
    Progress,
    StatusLine,
    duration,
    logs_above,
    progress_for,
    watching,
)
from pipeline.engine.sources.activity import ActivityCounter
from tests.support.world import FakeClock

DAY = date(2026, 11, 20)
PER_MINUTE = 100 / 60  # the unified API's budget, in requests a second


class Terminal(io.StringIO):
    """What a terminal receives."""

    def isatty(self) -> bool:
        return True


def _counter() -> tuple[ActivityCounter, FakeClock]:
    """Process totals of their own, on a clock of their own (the budget's waits are the HTTP layers' to time)."""
    waits = FakeClock()
    return ActivityCounter(waits), waits


def _spend(activity: ActivityCounter, waits: FakeClock, requests: int, budget_wait_s: float = 0.0) -> None:
    """Requests sent after waiting `budget_wait_s` for the budget."""
    with activity.budget_wait():
        waits.advance(budget_wait_s)
    for _ in range(requests):
        activity.add_request("/trades")


def test_the_estimate_waits_for_a_partition_then_takes_the_larger_of_budget_and_time() -> None:
    estimate = Estimate(total=5, requests_per_s=PER_MINUTE)
    assert estimate.seconds_left() is None
    estimate.record(requests=120, seconds=10.0)  # the budget's bound: 120 requests take 72 s at 100 a minute
    assert estimate.seconds_left() == pytest.approx(4 * 72)
    estimate.record(requests=0, seconds=290.0)  # the time's bound: 150 s a partition, 60 requests (36 s)
    assert estimate.seconds_left() == pytest.approx(3 * 150)


def test_without_a_budget_the_estimate_is_the_measured_time() -> None:
    estimate = Estimate(total=3, requests_per_s=None)
    estimate.record(requests=1_000, seconds=4.0)
    assert estimate.seconds_left() == pytest.approx(8.0)


@pytest.mark.parametrize(("seconds", "said"), [(0.4, "0 s"), (89, "89 s"), (90, "2 min"), (3_569, "59 min"),
                                               (6_720, "1 h 52 min"), (36_000, "10 h 00 min")])
def test_durations_read_in_the_largest_sensible_unit(seconds: float, said: str) -> None:
    assert duration(seconds) == said


def test_plain_lines_say_when_a_partition_starts_and_at_each_refresh(clock: FakeClock) -> None:
    stream, (activity, waits) = io.StringIO(), _counter()
    _spend(activity, waits, 7)  # before the backfill: not its requests
    progress = Progress(2, PlainLines(stream), PER_MINUTE, activity, clock)
    progress.begin("kalshi", DAY)
    _spend(activity, waits, 30, budget_wait_s=12.4)
    clock.advance(20)
    progress.refresh()
    progress.end()
    progress.begin("kalshi", DAY.replace(day=21))
    _spend(activity, waits, 5)
    progress.refresh()
    progress.end()

    assert stream.getvalue().splitlines() == [
        "progress: 0/2 partitions done, kalshi 2026-11-20 started: 0 requests (0 in this partition), "
        "0 s waited for the request budget, time left known after the first partition",
        "progress: 0/2 partitions done, kalshi 2026-11-20 running: 30 requests (30 in this partition), "
        "12 s waited for the request budget, time left known after the first partition",
        "progress: 1/2 partitions done, kalshi 2026-11-21 started: 30 requests (0 in this partition), "
        "12 s waited for the request budget, about 20 s left",
        "progress: 1/2 partitions done, kalshi 2026-11-21 running: 35 requests (5 in this partition), "
        "12 s waited for the request budget, about 20 s left",
    ]
    assert "\r" not in stream.getvalue()


def test_the_status_line_is_redrawn_in_place_and_cleared_before_a_result_line(
    clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    terminal, (activity, waits) = Terminal(), _counter()
    progress = Progress(3, StatusLine(terminal), PER_MINUTE, activity, clock)
    first = "0/3 done, estimating | polymarket 2026-11-20 | 0 requests (0 this partition) | budget wait 0 s"
    progress.begin("polymarket", DAY)
    assert terminal.getvalue() == "\r" + first

    _spend(activity, waits, 150, budget_wait_s=40.0)
    clock.advance(60)
    progress.refresh()
    progress.end()
    progress.display.clear()  # nothing more to clear
    drawn = terminal.getvalue().split("\r")
    assert drawn[2] == ("0/3 done, estimating | polymarket 2026-11-20 | 150 requests (150 this partition) | "
                        "budget wait 40 s")
    assert drawn[3:] == [" " * len(drawn[2]), ""], "cleared, the cursor back at the line's start"

    progress.begin("kalshi", DAY)  # 150 requests a partition at 100 a minute: 90 s each, two left
    assert terminal.getvalue().split("\r")[-1] == (
        "1/3 done, 3 min left | kalshi 2026-11-20 | 150 requests (0 this partition) | budget wait 40 s")


def test_a_shorter_status_line_blanks_what_the_longer_one_left_and_none_is_wider_than_the_terminal(
    clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    terminal = Terminal()
    progress = Progress(3, StatusLine(terminal), None, ActivityCounter(), clock)
    monkeypatch.setenv("COLUMNS", "200")
    progress.begin("polymarket", DAY)
    monkeypatch.setenv("COLUMNS", "30")
    progress.refresh()
    longer, shorter = terminal.getvalue().split("\r")[1:]
    assert shorter == "0/3 done, estimating | polyma".ljust(len(longer))


def test_a_log_record_goes_above_the_status_line_on_its_own_line(
    clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    terminal = Terminal()
    handler = logging.StreamHandler(terminal)
    handler.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
    root = logging.getLogger()
    monkeypatch.setattr(root, "handlers", [handler])
    progress = Progress(2, StatusLine(terminal), None, ActivityCounter(), clock)
    with logs_above(progress.display):
        progress.begin("kalshi", DAY)
        root.warning("listed the catalogue")
        progress.refresh()
    assert handler.stream is terminal, "the handler writes where it did once the backfill is over"
    line = "0/2 done, estimating | kalshi 2026-11-20 | 0 requests (0 this partition) | budget wait 0 s"
    assert terminal.getvalue() == f"\r{line}\r{' ' * len(line)}\rWARNING listed the catalogue\n\r{line}"


def test_a_terminal_gets_the_status_line_and_anything_else_plain_lines() -> None:
    on_terminal, every = progress_for(Terminal(), 4, PER_MINUTE, plain_every_s=30.0)
    assert isinstance(on_terminal.display, StatusLine) and every == TERMINAL_REFRESH_S
    in_a_log, every = progress_for(io.StringIO(), 4, PER_MINUTE, plain_every_s=30.0)
    assert isinstance(in_a_log.display, PlainLines) and every == 30.0


def test_a_thread_refreshes_while_the_partition_runs_and_stops_with_it() -> None:
    stream, activity = io.StringIO(), ActivityCounter()
    progress = Progress(1, PlainLines(stream), None, activity)
    with watching(progress, "kalshi", DAY, every_s=0.001):
        while stream.getvalue().count("\n") < 3:
            activity.add_request("/trades")
    said = stream.getvalue()
    assert " started: " in said.splitlines()[0] and " running: " in said.splitlines()[-1]
    time.sleep(0.01)
    assert stream.getvalue() == said, "no line after the partition ended"
    assert progress.estimate.done == 1
