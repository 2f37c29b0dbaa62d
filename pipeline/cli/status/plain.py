"""`pmw status`'s plain answer: a table per table x platform, then what is unreadable, incomplete or failed, and
whether yesterday landed."""

from __future__ import annotations

from pipeline.cli.status.facts import FailedCheck, Status, TableStatus, day_ranges, iso
from pipeline.engine.files import some_paths
from pipeline.engine.lake.scrub import ScrubRecord
from pipeline.engine.warehouse.builds import builds_line

SHOWN_RANGES = 3  # of the missing days, in the plain table (the JSON names them all)
UNKNOWN = "unknown without DAGSTER_HOME"


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
    lines.append(_scrub_line(status.scrub))
    lines.append(f"marts: {builds_line(status.marts)}")
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
    return (s.table, s.platform, str(len(s.landed)), iso(s.landed[0] if s.landed else None) or "-",
            iso(s.landed[-1] if s.landed else None) or "-", f"{s.rows:,}", f"{s.rejects:,}",
            "?" if s.incomplete is None else str(len(s.incomplete)), str(len(s.unreadable)),
            "-" if not s.daily else f"{len(s.missing)}: {shown}" if s.missing else "0")


def _check_lines(failed: list[FailedCheck] | None) -> list[str]:
    if failed is None:
        return [f"failed checks and incomplete partitions (incompl ?): {UNKNOWN}"]
    return [check.line() for check in failed] or ["failed checks: none"]


def _scrub_line(record: ScrubRecord | None) -> str:
    if record is None:
        return "lake scrub: never (job lake_scrub runs it daily; pmw verify reads every file)"
    scope = "the whole lake" if record.whole else "the files changed since the scrub before"
    said = f"lake scrub: {record.finished_at:%Y-%m-%d %H:%M} UTC, {scope}, {record.checked} files read, "
    if not record.bad:
        return said + "0 bad"
    return (said + f"{len(record.bad)} bad: {some_paths([b.path for b in record.bad])}; put each back with pmw "
            "restore (or rerun its partition), then pmw verify")


def _yesterday_line(status: Status) -> str:
    missing = status.yesterday_missing
    if not missing:
        return f"yesterday ({status.yesterday}): landed for every table on {', '.join(status.platforms)}"
    return f"yesterday ({status.yesterday}): MISSING for {', '.join(f'{s.table} {s.platform}' for s in missing)}"
