"""`pmw restore`: list a partition's kept versions, or put one back in its place."""

from __future__ import annotations

from collections.abc import Callable
from datetime import date

from pipeline.engine.config import Settings
from pipeline.engine.lake.store import Lake


def run_restore(settings: Settings, table: str, platform: str, day: date, stamp: str | None, list_only: bool,
                say: Callable[[str], None] = print) -> bool:
    """List the kept versions of the partition, or restore one (the newest, or `stamp`); False when there is none."""
    lake = Lake.of(settings, settings.keep_versions)
    current = lake.row_count(table, platform, day)
    kept = lake.versions(table, platform, day)
    if list_only:
        say(f"{table} {platform} {day}: now {_rows(current)}; {len(kept)} kept version(s), newest first")
        for version in kept:
            say(f"  {version.stamp}  {_rows(version.rows)}")
        return True
    try:
        restored = lake.restore(table, platform, day, stamp)
    except LookupError as error:
        say(f"pmw restore: {error}")
        return False
    say(f"pmw restore: {table} {platform} {day} is the version replaced at {restored.stamp} again "
        f"({_rows(restored.rows)}; it was {_rows(current)}, now kept as a version: pmw restore undoes it)")
    return True


def _rows(rows: int | None) -> str:
    return "no readable file" if rows is None else f"{rows:,} rows"
