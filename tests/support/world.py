"""The test worlds of the sandbox, the tests' rate window, and a clock that tests move by hand."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, date, datetime, timedelta
from functools import cache
from typing import Any

from pmw_sandbox import Faults, SandboxApp, SandboxConfig, WorldConfig
from pmw_sandbox.app import STRICT_RATE_LIMIT_PER_MIN
from pmw_sandbox.catalogue import Market
from pmw_sandbox.readings import Readings

# A fixed world: tests never depend on today's date. The emulator's own tests read it at the default sizes,
# which every status, market type and paging path of the emulator needs.
WORLD = WorldConfig(seed=11, end=date(2026, 11, 21), days=7)
# The world that the pipeline's tests land (`pipeline_env`, `tests.support.runs`): the same seed and days with
# a quarter of the markets, still about a hundred a platform (a partition's trades span several pages), so that
# each run costs a quarter of the requests and rows.
PIPELINE_WORLD = replace(WORLD, series_per_platform=4, events_per_series=4, markets_per_event=6,
                         multivariate_markets=2)

# The window that the tests' strict budgets count in: the real API's 100 requests a minute become 100 per
# TEST_RATE_WINDOW_S, so that a test which must outlast a window waits seconds, not minutes. The emulator
# takes it as SandboxConfig.rate_window_s (`pmw sandbox --rate-window`), the pipeline as PMW_RATE_WINDOW_S;
# time-based expectations are scaled from it.
TEST_RATE_WINDOW_S = 3.0
STRICT_BUDGET = STRICT_RATE_LIMIT_PER_MIN  # requests per TEST_RATE_WINDOW_S, as the real API per minute


@cache
def pipeline_sandbox(seed: int, end: date | None, faults: str, readings: str = "",
                     days: int = PIPELINE_WORLD.days) -> SandboxApp:
    """`pmw_sandbox.plug.sandbox_app` for the pipeline's tests: the in-process sandbox of PIPELINE_WORLD (under
    the seed, end and days of the settings), one per process and world like the plug's own."""
    world = replace(PIPELINE_WORLD, seed=seed, end=end, days=days)
    return SandboxApp(SandboxConfig(world=world, faults=Faults.parse(faults), readings=Readings.parse(readings)))


def is_live_on(market: Market, day: date, as_of: datetime) -> bool:
    """The world's truth: whether the market could be traded on the day, in a world that ends at `as_of`."""
    day_start = datetime.combine(day, datetime.min.time(), UTC)
    return market.trading_start < day_start + timedelta(days=1) and market.live_until(as_of) > day_start


def strict_config(**kwargs: Any) -> SandboxConfig:
    """The emulator in strict mode, its 100 requests counted per TEST_RATE_WINDOW_S instead of per minute."""
    return SandboxConfig.strict(rate_window_s=TEST_RATE_WINDOW_S, **kwargs)


def strict_budget_env() -> dict[str, str]:
    """The pipeline's settings for the same strict budget: 100 requests per TEST_RATE_WINDOW_S."""
    return {"PMW_RATE_LIMIT_PER_MIN": str(STRICT_BUDGET), "PMW_RATE_WINDOW_S": str(TEST_RATE_WINDOW_S)}


def strict_budget_world(end: date) -> WorldConfig:
    """A small world whose one-day backfill of both platforms takes about 50 requests: two of them, or a
    sensor filling two days, need more than one window of a strict budget of 100 requests per window."""
    return WorldConfig(
        seed=5,
        end=end,
        days=3,
        series_per_platform=3,
        events_per_series=3,
        markets_per_event=5,
        trades_per_market_day=100,
        multivariate_markets=2,
    )


class FakeClock:
    """A monotonic clock that tests move by hand."""

    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds
