"""The test worlds of the sandbox, and a clock that tests move by hand."""

from __future__ import annotations

from datetime import date

from pmw_sandbox import WorldConfig

# A fixed world: tests never depend on today's date.
WORLD = WorldConfig(seed=11, end=date(2026, 11, 21), days=7)


def strict_budget_world(end: date) -> WorldConfig:
    """A small world whose one-day backfill of both platforms takes about 50 requests: two of them, or a
    sensor filling two days, need more than one minute of a strict 100-a-minute budget."""
    return WorldConfig(
        seed=5,
        end=end,
        days=3,
        series_per_platform=3,
        events_per_series=3,
        markets_per_event=5,
        trades_per_market_day=300,
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
