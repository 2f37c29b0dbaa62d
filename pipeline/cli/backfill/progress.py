"""`pmw backfill`'s progress while a partition runs: partitions done, requests, budget waits, time left.

The requests and the waits for the request budget happen inside Dagster's in-process run of each partition,
in the HTTP layers; they add them to the process's running totals (pipeline.engine.sources.activity), and a
small thread here reads those totals while `materialise_partition` runs. On a terminal the figures are one
status line, redrawn in place a few times a second and cleared before a partition's result line is printed;
elsewhere (CI, logs, pipes) they are plain lines: one when a partition starts, then one every interval.
"""

from __future__ import annotations

import logging
import os
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date
from typing import Protocol, TextIO

from pipeline.engine.sources.activity import PROCESS_ACTIVITY, Activity, ActivityCounter

TERMINAL_REFRESH_S = 0.25  # the status line is redrawn at most four times a second
PLAIN_EVERY_S = 30.0  # the default interval between two plain progress lines (`pmw backfill --progress-every`)


@dataclass(frozen=True)
class Figures:
    """What a progress line says about the run at one moment."""

    done: int
    total: int
    platform: str
    day: date
    run: Activity  # since the backfill started
    partition: Activity  # since the partition in progress started
    seconds_left: float | None  # None until a partition has finished


class Estimate:
    """Time left: the partitions not finished times the larger of what a finished partition cost in requests
    at the request budget's rate (`requests_per_s`; None without a budget) and what it took in seconds."""

    def __init__(self, total: int, requests_per_s: float | None) -> None:
        self.total, self.requests_per_s = total, requests_per_s
        self.done, self.requests, self.seconds = 0, 0, 0.0

    def record(self, requests: int, seconds: float) -> None:
        """A partition finished, after `requests` requests and `seconds` seconds."""
        self.done += 1
        self.requests += requests
        self.seconds += seconds

    def seconds_left(self) -> float | None:
        if not self.done:
            return None
        per_partition = self.seconds / self.done
        if self.requests_per_s:
            per_partition = max(per_partition, self.requests / self.done / self.requests_per_s)
        return (self.total - self.done) * per_partition


def duration(seconds: float) -> str:
    """`42 s`, `7 min`, `3 h 05 min`."""
    whole = round(seconds)
    if whole < 90:
        return f"{whole} s"
    minutes = round(whole / 60)
    return f"{minutes} min" if minutes < 60 else f"{minutes // 60} h {minutes % 60:02d} min"


def describe(figures: Figures, state: str) -> str:
    """The figures as a plain line; `state` says what the partition in progress is doing (`started`,
    `running`)."""
    left = ("time left known after the first partition" if figures.seconds_left is None
            else f"about {duration(figures.seconds_left)} left")
    return (f"progress: {figures.done}/{figures.total} partitions done, {figures.platform} {figures.day} {state}: "
            f"{figures.run.requests} requests ({figures.partition.requests} in this partition), "
            f"{figures.run.budget_wait_s:.0f} s waited for the request budget, {left}")


def status(figures: Figures) -> str:
    """The figures as a terminal's status line: the estimate first, so that a narrow terminal cuts the least
    telling figures."""
    left = "estimating" if figures.seconds_left is None else f"{duration(figures.seconds_left)} left"
    return (f"{figures.done}/{figures.total} done, {left} | {figures.platform} {figures.day} | "
            f"{figures.run.requests} requests ({figures.partition.requests} this partition) | "
            f"budget wait {figures.run.budget_wait_s:.0f} s")


class Display(Protocol):
    """Where progress goes: told when a partition starts, at each refresh, and before its result is printed."""

    def started(self, figures: Figures) -> None: ...

    def refresh(self, figures: Figures) -> None: ...

    def clear(self) -> None: ...


class StatusLine:
    """One line on a terminal, redrawn in place with carriage returns and cut to the terminal's width (a line
    that wrapped could not be redrawn); blanked before anything else is printed, log records included
    (`logs_above`)."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.shown = 0  # characters of the line on screen
        self.lock = threading.Lock()  # the refreshing thread draws; a step's logging may write meanwhile

    def started(self, figures: Figures) -> None:
        self.refresh(figures)

    def refresh(self, figures: Figures) -> None:
        text = status(figures)[: _width(self.stream) - 1]
        with self.lock:
            self._draw(text.ljust(self.shown))
            self.shown = len(text)

    def clear(self) -> None:
        with self.lock:
            self._blank()

    def write_above(self, text: str) -> None:
        """Someone else's output: on a line of its own, the status line redrawn below it at the next refresh."""
        with self.lock:
            self._blank()
            self.stream.write(text)

    def _blank(self) -> None:
        if self.shown:
            self._draw(" " * self.shown + "\r")
            self.shown = 0

    def _draw(self, text: str) -> None:
        self.stream.write("\r" + text)
        self.stream.flush()


def _width(stream: TextIO) -> int:
    """The columns of the terminal `stream` is on (stdout may go elsewhere), else of COLUMNS or stdout's."""
    try:
        return os.get_terminal_size(stream.fileno()).columns
    except (OSError, ValueError):  # not a file descriptor's stream
        return shutil.get_terminal_size().columns


class _Above:
    """A stream for logging handlers that writes above a status line."""

    def __init__(self, line: StatusLine) -> None:
        self.line = line

    def write(self, text: str) -> None:
        self.line.write_above(text)

    def flush(self) -> None:
        self.line.stream.flush()


@contextmanager
def logs_above(display: Display) -> Iterator[None]:
    """While the body runs, the root logger's handlers that write where a status line is drawn write above it
    (else a log record would run on from the status line's text); plain lines need nothing of the kind."""
    if not isinstance(display, StatusLine):
        yield
        return
    handlers = [handler for handler in logging.getLogger().handlers
                if isinstance(handler, logging.StreamHandler) and handler.stream is display.stream]
    streams = [handler.setStream(_Above(display)) for handler in handlers]
    try:
        yield
    finally:
        for handler, stream in zip(handlers, streams, strict=True):
            handler.setStream(stream)


class PlainLines:
    """A line when a partition starts and one at each refresh, for logs: no carriage returns."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def started(self, figures: Figures) -> None:
        self._line(describe(figures, "started"))

    def refresh(self, figures: Figures) -> None:
        self._line(describe(figures, "running"))

    def clear(self) -> None:
        """Nothing to take back: every line stays."""

    def _line(self, text: str) -> None:
        self.stream.write(text + "\n")
        self.stream.flush()


class Progress:
    """The run's figures, read from the process's request totals, shown on `display`."""

    def __init__(self, total: int, display: Display, requests_per_s: float | None,
                 activity: ActivityCounter = PROCESS_ACTIVITY, clock: Callable[[], float] = time.monotonic) -> None:
        self.display, self.activity, self.clock = display, activity, clock
        self.estimate = Estimate(total, requests_per_s)
        self.run_start = self.partition_start = activity.snapshot()
        self.started_at = clock()
        self.platform, self.day = "", date.min

    def begin(self, platform: str, day: date) -> None:
        self.platform, self.day = platform, day
        self.partition_start, self.started_at = self.activity.snapshot(), self.clock()
        self.display.started(self.figures())

    def refresh(self) -> None:
        self.display.refresh(self.figures())

    def end(self) -> None:
        """The partition finished: measure it for the estimate, and clear the display for its result line."""
        spent = self.activity.snapshot() - self.partition_start
        self.estimate.record(spent.requests, self.clock() - self.started_at)
        self.display.clear()

    def figures(self) -> Figures:
        now = self.activity.snapshot()
        return Figures(self.estimate.done, self.estimate.total, self.platform, self.day, now - self.run_start,
                       now - self.partition_start, self.estimate.seconds_left())


def progress_for(stream: TextIO, total: int, requests_per_s: float | None,
                 plain_every_s: float) -> tuple[Progress, float]:
    """A status line on a terminal, refreshed every TERMINAL_REFRESH_S, else plain lines every `plain_every_s`:
    the progress and its refresh interval."""
    if stream.isatty():
        return Progress(total, StatusLine(stream), requests_per_s), TERMINAL_REFRESH_S
    return Progress(total, PlainLines(stream), requests_per_s), plain_every_s


@contextmanager
def watching(progress: Progress, platform: str, day: date, every_s: float) -> Iterator[None]:
    """Shows the partition's progress every `every_s` seconds from a thread of its own while the body runs;
    the display is cleared when it ends."""
    progress.begin(platform, day)
    stop = threading.Event()
    thread = threading.Thread(target=_refresh_until, args=(progress, stop, every_s), name="pmw-progress",
                              daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        progress.end()


def _refresh_until(progress: Progress, stop: threading.Event, every_s: float) -> None:
    while not stop.wait(every_s):
        progress.refresh()
