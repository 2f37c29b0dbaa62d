"""`pmw report`: its arguments, and the run that checks the settings then writes the page."""

from __future__ import annotations

import argparse
from pathlib import Path

from pipeline.cli.common.arguments import Subparsers, positive
from pipeline.cli.common.settings import configured


def add_parser(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "report",
        help="draw the marts as charts in one HTML file that opens without a network",
        description="Write one self-contained HTML page (plotly.js inline) of the last N days of the marts: daily "
                    "volume and trades per platform, the last day's top movers, hourly candles of the busiest "
                    "markets, volume by category and week, and the lake's rejects per table, platform and day. "
                    "The warehouse is opened read-only.",
        epilog="exit status: 0 the report was written; 1 the warehouse has no marts or no data in them yet (run "
               "`pmw demo`, or `pmw backfill` then `pmw sql`); 2 bad arguments or configuration.",
    )
    parser.add_argument("--days", type=positive, default=30, metavar="N",
                        help="the window: the last N days of marts.platform_daily, to its last day (default 30)")
    parser.add_argument("-o", "--output", type=Path, default=None, metavar="FILE",
                        help="where to write the page (default: report.html in PMW_DATA_DIR, data/report.html)")


def run(args: argparse.Namespace) -> int:
    settings = configured(writes=args.output is None)
    from pipeline.cli.report.page import run_report  # plotly: for this command only

    run_report(settings, args.days, args.output or settings.data_dir / "report.html")
    return 0
