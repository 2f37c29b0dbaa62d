"""`pmw status`: what has landed, what is missing, which checks failed and whether yesterday is fresh.

The lake answers for what landed (partition listings, rows and rejects from the Parquet footers, unreadable
files); what only Dagster recorded (incomplete partitions, failed checks) comes from the instance of
DAGSTER_HOME, or without it of the data dir's own home that `pmw demo` makes, and is said to be unknown without
either. Dagster is imported only then: it costs more to import
than the whole answer takes otherwise.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from pipeline.cli.dagster_home import data_dir_home
from pipeline.engine.config import Settings, partitions_start
from pipeline.engine.lake.storage import Location
from pipeline.engine.lake.store import Lake
from pipeline.engine.schema import TABLES

SHOWN_RANGES = 3  # of the missing days, in the plain table (the JSON names them all)
UNKNOWN = "unknown without DAGSTER_HOME"


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
    """One table on one platform, over the window."""

    table: str
    platform: str
    landed: list[date] = field(default_factory=list)  # readable partitions, sorted
    missing: list[date] = field(default_factory=list)
    rows: int = 0
    rejects: int = 0
    incomplete: dict[date, int] | None = None  # None: unknown (no DAGSTER_HOME)
    unreadable: list[str] = field(default_factory=list)  # paths relative to the lake root

    def as_json(self) -> dict[str, Any]:
        return {
            "table": self.table, "platform": self.platform, "partitions": len(self.landed),
            "first_day": _iso(self.landed[0] if self.landed else None),
            "last_day": _iso(self.landed[-1] if self.landed else None),
            "missing_days": day_ranges(self.missing), "missing_count": len(self.missing),
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

    @property
    def yesterday_missing(self) -> list[TableStatus]:
        return [s for s in self.tables if s.platform in self.platforms and self.yesterday not in s.landed]

    @property
    def ok(self) -> bool:
        return not self.yesterday_missing and not any(check.blocking for check in self.failed_checks or ())

    def as_json(self) -> dict[str, Any]:
        return {
            "lake": str(self.lake),
            "window": {"first": self.first.isoformat(), "last": self.yesterday.isoformat(),
                       "days": (self.yesterday - self.first).days + 1},
            "platforms": list(self.platforms),
            "dagster_home": self.dagster_home,
            "tables": [s.as_json() for s in self.tables],
            "failed_checks": None if self.failed_checks is None else [c.as_json() for c in self.failed_checks],
            "yesterday": {"day": self.yesterday.isoformat(), "landed": not self.yesterday_missing,
                          "missing": [{"table": s.table, "platform": s.platform} for s in self.yesterday_missing]},
            "ok": self.ok,
        }


def run_status(settings: Settings, days: int | None, as_json: bool, say: Callable[[str], None] = print) -> bool:
    """Say the lake's status (plain or one JSON document); True when yesterday landed everywhere and no check
    failed. Raises ConfigError for a bad PMW_START_DATE or DAGSTER_HOME."""
    status = collect_status(settings, days, datetime.now(UTC).date())
    say(json.dumps(status.as_json(), indent=2) if as_json else "\n".join(plain_lines(status)))
    return status.ok


def collect_status(settings: Settings, days: int | None, today: date) -> Status:
    """The facts of the window ending the day before `today`: `days` long, or from the first landed day."""
    lake = Lake.of(settings)
    yesterday = today - timedelta(days=1)
    configured = tuple(p.value for p in settings.platforms)
    landed = {table: lake.partitions(table) for table in TABLES}
    first = _window_start(landed, yesterday, days, date.fromisoformat(partitions_start()))
    platforms = list(dict.fromkeys([*configured, *sorted({p for found in landed.values() for p, _ in found})]))
    own_home = data_dir_home(settings.data_dir)
    home = os.environ.get("DAGSTER_HOME") or (str(own_home) if own_home else None)
    recorded = _recorded(own_home, first, yesterday) if home else None
    window = _window(first, yesterday)
    tables = []
    for table in TABLES:
        unreadable = lake.unreadable(table)
        for platform in platforms:
            listed = [d for p, d in landed[table] if p == platform and first <= d <= yesterday]
            tables.append(_table_status(lake, table, platform, listed, window, unreadable, recorded))
    return Status(lake.url, first, yesterday, configured, tables, home,
                  None if recorded is None else recorded.failed_checks)


def _window_start(landed: dict[str, list[tuple[str, date]]], yesterday: date, days: int | None, start: date) -> date:
    """The first day of the window: `days` before yesterday's end, else the first landed day (yesterday when
    nothing landed), never before PMW_START_DATE nor after yesterday."""
    if days is not None:
        first = yesterday - timedelta(days=days - 1)
    else:
        first = min((d for found in landed.values() for _, d in found), default=yesterday)
    return min(max(first, start), yesterday)


def _window(first: date, last: date) -> list[date]:
    return [first + timedelta(days=n) for n in range((last - first).days + 1)]


def _recorded(own_home: Path | None, first: date, last: date) -> Recorded:
    """DAGSTER_HOME's records, or those of the data dir's own home (`own_home`)."""
    from pipeline.cli.status_records import home_records

    return home_records(own_home, first, last)


def _table_status(lake: Lake, table: str, platform: str, listed: list[date], window: list[date],
                  unreadable: list[Location], recorded: Recorded | None) -> TableStatus:
    status = TableStatus(table, platform)
    for day in listed:
        rows, rejects = lake.row_count(table, platform, day), lake.rejects_count(table, platform, day)
        if rejects is None:
            status.unreadable.append(_relative(lake, lake.rejects_path(table, platform, day)))
        if rows is None:
            status.unreadable.append(_relative(lake, lake.partition_path(table, platform, day)))
            continue
        status.landed.append(day)
        status.rows += rows
        status.rejects += rejects or 0
    readable = set(status.landed)
    status.missing = [day for day in window if day not in readable]
    status.unreadable = sorted({*status.unreadable, *_unreadable_paths(lake, unreadable, platform, window)})
    if recorded is not None:
        status.incomplete = {day: markets for (t, p, day), markets in recorded.incomplete.items()
                             if t == table and p == platform and day in readable}
    return status


def _unreadable_paths(lake: Lake, unreadable: list[Location], platform: str, window: Sequence[date]) -> Iterable[str]:
    """Of a table's `Lake.unreadable` paths, the platform's partitions in the window and the directories above."""
    days = {f"date={day.isoformat()}" for day in window}
    for path in unreadable:
        parts = Path(_relative(lake, path)).parts  # table, platform=<p>, date=<d>, data.parquet
        if len(parts) < 2 or (parts[1] == f"platform={platform}" and (len(parts) < 3 or parts[2] in days)):
            yield _relative(lake, path)


def _relative(lake: Lake, path: Location) -> str:
    return str(path).removeprefix(f"{lake.url}/")


def day_ranges(days: Sequence[date]) -> list[str]:
    """Sorted days as ranges: `2026-11-01..2026-11-03` for consecutive days, a lone day as itself."""
    ranges: list[list[date]] = []
    for day in sorted(days):
        if ranges and day - ranges[-1][1] == timedelta(days=1):
            ranges[-1][1] = day
        else:
            ranges.append([day, day])
    return [a.isoformat() if a == b else f"{a.isoformat()}..{b.isoformat()}" for a, b in ranges]


def plain_lines(status: Status) -> list[str]:
    """The table per table x platform, then the unreadable files, the failed checks and yesterday's line."""
    lines = [f"pmw status: {status.lake}, {status.first}..{status.yesterday}"]
    header = ("table", "platform", "parts", "first", "last", "rows", "rejects", "incompl", "unread", "missing")
    rows = [header, *(_row(s) for s in status.tables)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header) - 1)]
    lines += [_aligned(row, widths) for row in rows]
    lines += [f"UNREADABLE {status.lake}/{path}" for s in status.tables for path in s.unreadable]
    lines += [f"INCOMPLETE {s.table} {s.platform} {day}: {markets} market(s) not read back to the day's start"
              for s in status.tables for day, markets in sorted((s.incomplete or {}).items())]
    lines += _check_lines(status.failed_checks)
    lines.append(_yesterday_line(status))
    return lines


def _aligned(row: tuple[str, ...], widths: list[int]) -> str:
    """Names left-aligned, numbers right-aligned, the missing days last, as they come."""
    cells = [cell.ljust(width) if i < 2 else cell.rjust(width)
             for i, (cell, width) in enumerate(zip(row[:-1], widths, strict=True))]
    return "  ".join([*cells, row[-1]])


def _row(s: TableStatus) -> tuple[str, ...]:
    ranges = day_ranges(s.missing)
    more = len(ranges) - SHOWN_RANGES
    shown = ", ".join(ranges[:SHOWN_RANGES]) + (f", +{more} more" if more > 0 else "")
    return (s.table, s.platform, str(len(s.landed)), _iso(s.landed[0] if s.landed else None) or "-",
            _iso(s.landed[-1] if s.landed else None) or "-", f"{s.rows:,}", f"{s.rejects:,}",
            "?" if s.incomplete is None else str(len(s.incomplete)), str(len(s.unreadable)),
            f"{len(s.missing)}: {shown}" if s.missing else "0")


def _check_lines(failed: list[FailedCheck] | None) -> list[str]:
    if failed is None:
        return [f"failed checks and incomplete partitions (incompl ?): {UNKNOWN}"]
    return [check.line() for check in failed] or ["failed checks: none"]


def _yesterday_line(status: Status) -> str:
    missing = status.yesterday_missing
    if not missing:
        return f"yesterday ({status.yesterday}): landed for every table on {', '.join(status.platforms)}"
    return f"yesterday ({status.yesterday}): MISSING for {', '.join(f'{s.table} {s.platform}' for s in missing)}"


def _iso(day: date | None) -> str | None:
    return None if day is None else day.isoformat()
