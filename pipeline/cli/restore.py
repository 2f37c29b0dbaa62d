"""`pmw restore`: list a partition's kept versions, or put one back in its place."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from datetime import date

from pipeline.cli.common.arguments import Subparsers, day
from pipeline.cli.common.failures import CommandError
from pipeline.cli.common.settings import configured
from pipeline.engine.config import Settings
from pipeline.engine.lake.store import Lake
from pipeline.engine.schema import lake_tables


def add_parser(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "restore",
        help="put back a version of a partition that a later write replaced (PMW_KEEP_VERSIONS are kept)",
        epilog="exit status: 0 restored (or listed); 1 no such kept version; 2 bad arguments or configuration.",
    )
    parser.add_argument("--table", required=True, choices=list(lake_tables()))
    parser.add_argument("--platform", required=True,
                        help="the partition's platform, or its league for a sports table (leagues, teams, ...)")
    parser.add_argument("--date", required=True, type=day, help="the partition's day, YYYY-MM-DD")
    parser.add_argument("--version", default=None, help="the stamp of the version to restore (default: the newest)")
    parser.add_argument("--list", action="store_true", help="list the kept versions instead")


def run(args: argparse.Namespace) -> int:
    _check_partition_value(args.table, args.platform)
    settings = configured(writes=True)
    return 0 if run_restore(settings, args.table, args.platform, args.date, args.version, args.list) else 1


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
    now = lake.row_count(table, platform, day)
    say(f"pmw restore: {table} {platform} {day} is the version replaced at {restored.stamp} again "
        f"({_rows(now)}; it was {_rows(current)}, now kept as a version: pmw restore undoes it)")
    return True


def _check_partition_value(table: str, value: str) -> None:
    """CommandError (exit 2) unless `value` is one the table is partitioned by (a platform, or a league)."""
    spec = lake_tables()[table]
    allowed = [str(v) for v in spec.partition_values]
    if value not in allowed:
        raise CommandError(f"table {table} is partitioned by {spec.partitioned_by}: --platform "
                           f"{', '.join(allowed[:-1])} or {allowed[-1]}, not {value!r}")


def _rows(rows: int | None) -> str:
    return "no readable file" if rows is None else f"{rows:,} rows"
