"""What `pmw status` finds: per table and platform, what landed and what is missing over the window, and what the
Dagster instance recorded (incomplete partitions, failed checks); each as JSON for `pmw status --json`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any

from pipeline.engine.lake.scrub import ScrubRecord


@dataclass(frozen=True)
class FailedCheck:
    """The latest evaluation of a check on a partition, which failed."""

    asset: str
    check: str
    platform: str
    day: date
    severity: str
    description: str
    concerned: tuple[str, ...] = ()  # a reconciliation's markets (events, lists, answers) concerned

    @property
    def blocking(self) -> bool:
        """A failure of severity ERROR: the data is wrong (as `pmw backfill` judges it); a WARN is reported only."""
        return self.severity == "ERROR"

    def line(self) -> str:
        return (f"FAILED CHECK {self.asset}.{self.check} {self.platform} {self.day} ({self.severity}): "
                f"{self.description}")

    def as_json(self) -> dict[str, Any]:
        named = {"concerned": list(self.concerned)} if self.concerned else {}
        return {"asset": self.asset, "check": self.check, "platform": self.platform, "day": self.day.isoformat(),
                "severity": self.severity, "description": self.description, **named}


@dataclass(frozen=True)
class Recorded:
    """What the Dagster instance knows: per (table, platform, day), the markets its latest materialisation could
    not read back to the day's start (only incomplete partitions), and the failed checks."""

    incomplete: dict[tuple[str, str, date], int]
    failed_checks: list[FailedCheck]


@dataclass
class TableStatus:
    """One table on one platform (or league), over the window."""

    table: str
    platform: str
    daily: bool = True  # landed every day (TABLES), so its missing days count; else (watch lists, rounds) not
    landed: list[date] = field(default_factory=list)  # readable partitions, sorted
    missing: list[date] = field(default_factory=list)
    rows: int = 0
    rejects: int = 0
    incomplete: dict[date, int] | None = None  # None: unknown (no DAGSTER_HOME)
    unreadable: list[str] = field(default_factory=list)  # paths relative to the lake root

    def as_json(self) -> dict[str, Any]:
        return {
            "table": self.table, "platform": self.platform, "partitions": len(self.landed),
            "first_day": iso(self.landed[0] if self.landed else None),
            "last_day": iso(self.landed[-1] if self.landed else None),
            "daily": self.daily, "missing_days": day_ranges(self.missing) if self.daily else None,
            "missing_count": len(self.missing) if self.daily else None,
            "rows": self.rows, "rejects": self.rejects,
            "incomplete": None if self.incomplete is None else [
                {"day": day.isoformat(), "markets": markets} for day, markets in sorted(self.incomplete.items())],
            "unreadable": self.unreadable,
        }


@dataclass(frozen=True)
class Status:
    lake: str  # the lake's root: its folder, or its URL
    first: date
    yesterday: date
    platforms: tuple[str, ...]  # the configured ones (PMW_PLATFORMS), whose yesterday must have landed
    tables: list[TableStatus]
    dagster_home: str | None
    failed_checks: list[FailedCheck] | None  # None: unknown (no DAGSTER_HOME)
    scrub: ScrubRecord | None = None  # the lake's last scrub (pipeline.engine.lake.scrub); None: never scrubbed
    marts: dict[str, str] | None = None  # table model -> the build readers see it from; None: none published

    @property
    def yesterday_missing(self) -> list[TableStatus]:
        return [s for s in self.tables
                if s.daily and s.platform in self.platforms and self.yesterday not in s.landed]

    @property
    def ok(self) -> bool:
        return (not self.yesterday_missing and not any(check.blocking for check in self.failed_checks or ())
                and not (self.scrub and self.scrub.bad))

    def as_json(self) -> dict[str, Any]:
        return {
            "lake": str(self.lake),
            "window": {"first": self.first.isoformat(), "last": self.yesterday.isoformat(),
                       "days": (self.yesterday - self.first).days + 1},
            "platforms": list(self.platforms),
            "dagster_home": self.dagster_home,
            "tables": [s.as_json() for s in self.tables],
            "failed_checks": None if self.failed_checks is None else [c.as_json() for c in self.failed_checks],
            "scrub": None if self.scrub is None else self.scrub.as_json(),
            "marts": self.marts,
            "yesterday": {"day": self.yesterday.isoformat(), "landed": not self.yesterday_missing,
                          "missing": [{"table": s.table, "platform": s.platform} for s in self.yesterday_missing]},
            "ok": self.ok,
        }


def day_ranges(days: Sequence[date]) -> list[str]:
    """Sorted days as ranges: `2026-11-01..2026-11-03` for consecutive days, a lone day as itself."""
    ranges: list[list[date]] = []
    for day in sorted(days):
        if ranges and day - ranges[-1][1] == timedelta(days=1):
            ranges[-1][1] = day
        else:
            ranges.append([day, day])
    return [a.isoformat() if a == b else f"{a.isoformat()}..{b.isoformat()}" for a, b in ranges]


def iso(day: date | None) -> str | None:
    return None if day is None else day.isoformat()
