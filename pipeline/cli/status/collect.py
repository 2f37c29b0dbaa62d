"""What `pmw status` collects: what has landed, what is missing, which checks failed and whether yesterday is fresh.

The lake answers for what landed (partition listings, rows and rejects from the Parquet footers, unreadable
files); what only Dagster recorded (incomplete partitions, failed checks) comes from the instance of
DAGSTER_HOME, or without it of the data dir's own home that `pmw` commands make, and is said to be unknown without
either. Dagster is imported only then: it costs more to import
than the whole answer takes otherwise.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import date, timedelta
from pathlib import Path

from pipeline.cli.common.dagster_home import data_dir_home
from pipeline.cli.status.facts import Recorded, Status, TableStatus
from pipeline.engine.config import Settings, dagster_home
from pipeline.engine.lake.scrub import last_scrub
from pipeline.engine.lake.storage import Location
from pipeline.engine.lake.store import Lake
from pipeline.engine.schema import TABLES, lake_tables
from pipeline.engine.warehouse.builds import shown_builds
from pipeline.engine.warehouse.views import connect_read_only


def collect_status(settings: Settings, days: int | None, today: date) -> Status:
    """The facts of the window ending the day before `today`: `days` long, or from the first landed day of the
    daily tables. Every daily table (TABLES) is listed on every platform, its missing days counted; the lake's
    other tables (order books, traders, platform status, sports), which land from watch lists and rounds rather
    than every day, on the platforms (or leagues) they landed for, without missing days."""
    lake = Lake.of(settings)
    yesterday = today - timedelta(days=1)
    configured = tuple(p.value for p in settings.platforms)
    landed = {table: lake.partitions(table) for table in lake_tables()}
    daily = {table: landed[table] for table in TABLES}
    first = _window_start(daily, yesterday, days, settings.first_day)
    platforms = list(dict.fromkeys([*configured, *sorted({p for found in daily.values() for p, _ in found})]))
    found = dagster_home() or data_dir_home(settings.data_dir)
    home = str(found) if found else None
    recorded = _recorded(settings.data_dir, first, yesterday) if home else None
    window = _window(first, yesterday)
    tables = []
    for table, found in landed.items():
        unreadable = lake.unreadable(table)
        for platform in platforms if table in TABLES else sorted({p for p, _ in found}):
            listed = [d for p, d in found if p == platform and first <= d <= yesterday]
            tables.append(_table_status(lake, table, platform, listed, window, unreadable, recorded))
    return Status(lake.url, first, yesterday, configured, tables, home,
                  None if recorded is None else recorded.failed_checks, last_scrub(lake),
                  _published_builds(settings.warehouse_path))


def _published_builds(warehouse_path: Path) -> dict[str, str] | None:
    """Which build each table model comes from, as the warehouse file shows readers; None when none is published."""
    if not warehouse_path.exists():
        return None
    with connect_read_only(warehouse_path) as connection:
        return shown_builds(connection)


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


def _recorded(data_dir: Path, first: date, last: date) -> Recorded:
    """DAGSTER_HOME's records, or those of the data dir's own home."""
    from pipeline.cli.status.records import home_records

    return home_records(data_dir, first, last)


def _table_status(lake: Lake, table: str, platform: str, listed: list[date], window: list[date],
                  unreadable: list[Location], recorded: Recorded | None) -> TableStatus:
    """A table on a platform (or league); a day of the window it lacks is missing for a daily table only."""
    status = TableStatus(table, platform, daily=table in TABLES)
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
    status.missing = [day for day in window if day not in readable] if status.daily else []
    status.unreadable = sorted({*status.unreadable, *_unreadable_paths(lake, table, unreadable, platform, window)})
    if recorded is not None:
        status.incomplete = {day: markets for (t, p, day), markets in recorded.incomplete.items()
                             if t == table and p == platform and day in readable}
    return status


def _unreadable_paths(lake: Lake, table: str, unreadable: list[Location], platform: str,
                      window: Sequence[date]) -> Iterable[str]:
    """Of a table's `Lake.unreadable` paths, the platform's (or league's) partitions in the window and the
    directories above."""
    days = {f"date={day.isoformat()}" for day in window}
    directory = f"{lake_tables()[table].partitioned_by}={platform}"
    for path in unreadable:
        parts = Path(_relative(lake, path)).parts  # table, platform=<p> (or league=<l>), date=<d>, data.parquet
        if len(parts) < 2 or (parts[1] == directory and (len(parts) < 3 or parts[2] in days)):
            yield _relative(lake, path)


def _relative(lake: Lake, path: Location) -> str:
    return str(path).removeprefix(f"{lake.url}/")
