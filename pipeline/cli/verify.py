"""`pmw verify`: the lake's scrub over every file, a line per bad file and progress on the way; recorded as the last
scrub (pipeline.engine.lake.scrub), which `pmw status` shows."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from pipeline.cli.common.arguments import Subparsers
from pipeline.cli.common.settings import configured
from pipeline.engine.config import Settings
from pipeline.engine.lake.scrub import ScrubNotRecordedError, scrub
from pipeline.engine.lake.storage import Location
from pipeline.engine.lake.store import Lake
from pipeline.engine.lake.verify import BadFile
from pipeline.engine.warehouse.views import foreign_raw_views

PROGRESS_EVERY = 500  # files


def add_parser(subparsers: Subparsers) -> None:
    subparsers.add_parser(
        "verify",
        help="read every lake file back, each page against its checksum, and name the bad ones",
        epilog="exit status: 0 every file reads back as written; 1 a file is bad (its path and why are printed); "
               "2 bad configuration.",
    )


def run(_args: argparse.Namespace) -> int:
    return 0 if run_verify(configured()) else 1


def run_verify(settings: Settings, say: Callable[[str], None] = print) -> bool:
    """Read every data and rejects file of the lake back; say which cannot be trusted; True if none."""
    lake = Lake.of(settings)
    say(f"pmw verify: every file of {lake.url}, each page against its checksum")
    seen = [0, 0]  # files (and unlistable paths) so far, bad so far

    def progress(path: Location, problem: BadFile | None) -> None:
        seen[0] += 1
        if problem is not None:
            seen[1] += 1
            say(f"BAD {path}: {problem.problem}")
        if seen[0] % PROGRESS_EVERY == 0:
            say(f"  {seen[0]} files checked, {seen[1]} bad so far")

    try:
        scrub(lake, datetime.now(UTC), timedelta(0), progress)
    except ScrubNotRecordedError as error:  # every file was read and said; pmw status shows the scrub before
        say(f"pmw verify: {error}")
    checked, bad = seen
    foreign = foreign_raw_views(settings.warehouse_path, lake)
    if foreign:
        say(f"BAD {settings.warehouse_path}: views {', '.join(foreign)} read another lake than {lake.url} (a copied "
            "or moved data dir); any pmw backfill or pmw sql with this PMW_DATA_DIR writes them again")
    say(f"pmw verify: {checked} files, {bad} bad" + (
        "; rerun their partitions (pmw backfill) to write them again" if bad else "")
        + (f"; {len(foreign)} raw view(s) reading another lake" if foreign else ""))
    return bad == 0 and not foreign
