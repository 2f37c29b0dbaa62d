"""`pmw status`: its arguments, and the run that collects the window's facts and prints them, plain or as JSON."""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime

from pipeline.cli.common.arguments import Subparsers, positive
from pipeline.cli.common.failures import CommandError
from pipeline.cli.common.settings import configured
from pipeline.cli.status.collect import collect_status
from pipeline.cli.status.plain import plain_lines
from pipeline.engine.config import ConfigError


def add_parser(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "status",
        help="what has landed, what is missing, which checks failed and whether yesterday is fresh",
        description="Per table and platform: partitions landed, first and last day, missing days of the window, "
                    "rows and rejects (from the Parquet footers), incomplete and unreadable partitions; then the "
                    "failed checks of the latest materialisations, the last scrub of the lake, the build the marts "
                    "are of, and whether yesterday (UTC) landed. Incomplete "
                    "partitions and failed checks are read from DAGSTER_HOME's instance (without it, from the data "
                    "dir's own dagster_home that pmw demo makes), unknown without either.",
        epilog="exit status: 0 yesterday landed for every table and platform, no check of severity ERROR "
               "failed and the last scrub found no bad file; 1 yesterday is missing somewhere, such a check failed "
               "(a failed WARN check is listed only) or the last scrub found a bad file; 2 bad arguments or "
               "configuration.",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON document (keys in docs/operating.md)")
    parser.add_argument("--days", type=positive, default=None, metavar="N",
                        help="the window: the last N days to yesterday (default: from the first landed day)")


def run(args: argparse.Namespace) -> int:
    settings = configured()
    try:
        status = collect_status(settings, args.days, datetime.now(UTC).date())
    except ConfigError as error:  # a bad PMW_START_DATE, or DAGSTER_HOME, read only when the instance is
        raise CommandError(str(error)) from None
    print(json.dumps(status.as_json(), indent=2) if args.json else "\n".join(plain_lines(status)))
    return 0 if status.ok else 1
