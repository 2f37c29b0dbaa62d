"""`pmw`: the command line of pm-warehouse."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from pipeline.cli import normalize as normalize_cli
from pipeline.cli.arguments import day, positive, seconds
from pipeline.cli.progress import PLAIN_EVERY_S
from pipeline.engine.schema import MARKET_PLATFORMS, TABLES

if TYPE_CHECKING:
    from pipeline.engine.config import Settings

EMULATOR_COMMANDS = frozenset({"sandbox", "demo"})  # the commands that run the emulator
# The commands that write in PMW_DATA_DIR (and `pmw report` without -o), which must then be a writable folder.
WRITING_COMMANDS = frozenset({"backfill", "demo", "sql", "restore"})
# The commands that never call the configured source, so PMW_SOURCE=api needs no URL nor key for them.
SOURCELESS_COMMANDS = frozenset({"demo", "query", "shell"})


def _platform_list(text: str) -> list[str]:
    platforms = [p.strip() for p in text.split(",") if p.strip()]
    allowed = [p.value for p in MARKET_PLATFORMS]
    unknown = [p for p in platforms if p not in allowed]
    if unknown or not platforms:
        raise argparse.ArgumentTypeError(f"unknown platform(s) {', '.join(unknown) or text!r}; "
                                         f"expected a comma list of {', '.join(allowed)}")
    return list(dict.fromkeys(platforms))


def _asset_list(text: str) -> list[str]:
    names = [a.strip() for a in text.split(",") if a.strip()]
    unknown = [a for a in names if a not in TABLES]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"unknown asset(s) {', '.join(unknown) or text!r}; "
                                         f"expected a comma list of {', '.join(TABLES)}")
    return names


def _selector_list(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of `pmw`; the emulator's options are added only when `command` is one of EMULATOR_COMMANDS (or
    None: every option, for help and tests)."""
    parser = argparse.ArgumentParser(prog="pmw", description="pm-warehouse: prediction-market data pipeline")
    commands = parser.add_subparsers(dest="command", required=True)

    sandbox = commands.add_parser("sandbox", help="serve the offline emulator of the unified API")
    backfill = commands.add_parser(
        "backfill",
        help="materialise (platform, day) partitions through Dagster",
        description="Materialise (platform, day) partitions through Dagster, with their checks; a line per "
                    "partition, then the requests per endpoint, then a FAILED PARTITION or FAILED CHECK line for "
                    "each failure (a failed check's partition still lands).",
        epilog="exit status: 0 every partition landed and no check of severity ERROR failed; 1 a partition "
               "failed or a check of severity ERROR failed, or a platform was held (the service's /platforms "
               "reports it unavailable: one HELD PLATFORM line); 2 bad arguments or configuration.",
    )
    backfill.add_argument("--platform", required=True, type=_platform_list,
                          help="comma list of platforms, e.g. polymarket,kalshi")
    backfill.add_argument("--start", required=True, type=day, help="first day, YYYY-MM-DD")
    backfill.add_argument("--end", type=day, default=None, help="last day (default: the start day)")
    backfill.add_argument("--assets", type=_asset_list, default=None,
                          help="comma list of assets (default: all five)")
    backfill.add_argument("--allow-shrink", action="store_true",
                          help="let reruns replace landed partitions with fewer rows, or none (a deliberate "
                               "correction; as PMW_ALLOW_SHRINK=1)")
    backfill.add_argument("--verbose", action="store_true",
                          help="also print Dagster's warnings and errors, with their stack traces (by default "
                               "each partition's line names what went wrong)")
    backfill.add_argument("--progress-every", type=seconds, default=PLAIN_EVERY_S, metavar="SECONDS",
                          help="when stderr is not a terminal, print a progress line this often (default "
                               f"{PLAIN_EVERY_S:g}); on a terminal a status line is redrawn in place instead")

    demo = commands.add_parser("demo", help="run the pipeline end to end on the offline sandbox")
    demo.add_argument("--days", type=positive, default=2, help="how many recent days to pull (default 2)")
    if command is None or command in EMULATOR_COMMANDS:  # their options come from the emulator, loaded only for them
        from pipeline.cli import sandbox as sandbox_cli

        sandbox_cli.add_sandbox_options(sandbox)
        sandbox_cli.add_world_options(demo)

    sql = commands.add_parser("sql", help="build the dbt_like_sql models and run their SQL tests")
    sql.add_argument("--select", action="extend", type=_selector_list, default=[], metavar="MODEL",
                     help="model(s) to build, e.g. marts.market_daily or market_daily; +MODEL adds its upstream "
                          "models, MODEL+ its downstream models; repeatable or comma separated (default: all)")
    restore = commands.add_parser(
        "restore",
        help="put back a version of a partition that a later write replaced (PMW_KEEP_VERSIONS are kept)",
        epilog="exit status: 0 restored (or listed); 1 no such kept version; 2 bad arguments or configuration.",
    )
    restore.add_argument("--table", required=True, choices=list(TABLES))
    restore.add_argument("--platform", required=True, choices=[p.value for p in MARKET_PLATFORMS])
    restore.add_argument("--date", required=True, type=day, help="the partition's day, YYYY-MM-DD")
    restore.add_argument("--version", default=None, help="the stamp of the version to restore (default: the newest)")
    restore.add_argument("--list", action="store_true", help="list the kept versions instead")
    commands.add_parser(
        "verify",
        help="read every lake file back, each page against its checksum, and name the bad ones",
        epilog="exit status: 0 every file reads back as written; 1 a file is bad (its path and why are printed); "
               "2 bad configuration.",
    )
    status = commands.add_parser(
        "status",
        help="what has landed, what is missing, which checks failed and whether yesterday is fresh",
        description="Per table and platform: partitions landed, first and last day, missing days of the window, "
                    "rows and rejects (from the Parquet footers), incomplete and unreadable partitions; then the "
                    "failed checks of the latest materialisations and whether yesterday (UTC) landed. Incomplete "
                    "partitions and failed checks are read from DAGSTER_HOME's instance (without it, from the data "
                    "dir's own dagster_home that pmw demo makes), unknown without either.",
        epilog="exit status: 0 yesterday landed for every table and platform and no check of severity ERROR "
               "failed; 1 yesterday is missing somewhere or such a check failed (a failed WARN check is listed "
               "only); 2 bad arguments or configuration.",
    )
    status.add_argument("--json", action="store_true", help="print one JSON document (keys in docs/operating.md)")
    status.add_argument("--days", type=positive, default=None, metavar="N",
                        help="the window: the last N days to yesterday (default: from the first landed day)")
    report = commands.add_parser(
        "report",
        help="draw the marts as charts in one HTML file that opens without a network",
        description="Write one self-contained HTML page (plotly.js inline) of the last N days of the marts: daily "
                    "volume and trades per platform, the last day's top movers, hourly candles of the busiest "
                    "markets, volume by category and week, and the lake's rejects per table, platform and day. "
                    "The warehouse is opened read-only.",
        epilog="exit status: 0 the report was written; 1 the warehouse has no marts or no data in them yet (run "
               "`pmw demo`, or `pmw backfill` then `pmw sql`); 2 bad arguments or configuration.",
    )
    report.add_argument("--days", type=positive, default=30, metavar="N",
                        help="the window: the last N days of marts.platform_daily, to its last day (default 30)")
    report.add_argument("-o", "--output", type=Path, default=None, metavar="FILE",
                        help="where to write the page (default: report.html in PMW_DATA_DIR, data/report.html)")
    normalize_cli.add_parser(commands)
    _add_query_parsers(commands)

    bench = commands.add_parser("bench", help="run the benchmarks of this checkout (see benchmarks/README.md)")
    bench.add_argument("--quick", action="store_true", help="tiny sizes: proves the benchmarks still run (CI)")
    bench.add_argument("--only", default=None,
                       help="comma list of normalisation, memory, requests, windows, queries, snapshots")
    return parser


def _add_query_parsers(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`pmw query` and `pmw shell`: SQL on PMW_DATA_DIR's warehouse, opened read-only."""
    from pipeline.cli.query import DEFAULT_MAX_ROWS, FORMATS

    query = commands.add_parser(
        "query",
        help="run one SQL statement on the warehouse, read-only, and print or write its result",
        description="Run one SQL statement on PMW_DATA_DIR's warehouse.duckdb, opened read-only (a pipeline "
                    "running meanwhile is not disturbed), and print its result as a table, or write it as "
                    "csv, json (an array of objects) or parquet. Times are shown in UTC.",
        epilog="exit status: 0 the statement ran; 1 it failed, or the warehouse is missing or held read-write "
               "by another process (one line on stderr says which); 2 bad arguments (also: not exactly one "
               "statement, parquet without -o).",
    )
    query.add_argument("sql", help='the statement, e.g. "SELECT platform, count(*) FROM raw.trades GROUP BY ALL"')
    query.add_argument("--format", choices=FORMATS, default="table",
                       help="table (default: an aligned table of the first --max-rows rows), csv, json or parquet")
    query.add_argument("-o", "--output", type=Path, default=None,
                       help="write the whole result to this file (csv, json, parquet; parquet needs it) instead of "
                            "standard output")
    query.add_argument("--max-rows", type=positive, default=DEFAULT_MAX_ROWS,
                       help=f"rows a table shows, and then says how many there are (default {DEFAULT_MAX_ROWS})")
    shell = commands.add_parser(
        "shell",
        help="an interactive read-only SQL prompt on the warehouse, with history",
        description="A SQL prompt on PMW_DATA_DIR's warehouse.duckdb, each statement run read-only. Statements "
                    "end with ';' and may span lines; .tables lists the tables and views, .help the commands; "
                    "Ctrl-D leaves. On a terminal, lines are edited with readline and kept in ~/.pmw_history; "
                    "statements can also be piped in.",
        epilog="exit status: 0 the input ended (a failed statement is said on stderr and the prompt goes on); "
               "1 the warehouse is missing; 2 bad arguments.",
    )
    shell.add_argument("--max-rows", type=positive, default=DEFAULT_MAX_ROWS,
                       help=f"rows each result shows (default {DEFAULT_MAX_ROWS})")


def _run_query(args: argparse.Namespace, settings: Settings) -> int:
    from pipeline.cli.query import QueryError, run_query

    try:
        run_query(settings.warehouse_path, args.sql, args.format, args.output, args.max_rows)
    except QueryError as error:
        print(f"pmw query: {error}", file=sys.stderr)
        return error.status
    except BrokenPipeError:  # the reader had enough (`| head`): no traceback, nor one when stdout is flushed at exit
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


def _run_shell(args: argparse.Namespace, settings: Settings) -> int:
    from pipeline.cli.query import QueryError
    from pipeline.cli.shell import run_shell

    try:
        return run_shell(settings.warehouse_path, max_rows=args.max_rows)
    except QueryError as error:
        print(f"pmw shell: {error}", file=sys.stderr)
        return error.status


def _run_sandbox(args: argparse.Namespace) -> int:
    from pipeline.cli.sandbox import serve

    return serve(args)


def _configured(args: argparse.Namespace) -> Settings | None:
    """Every setting of the environment, checked once before the command runs anything: the settings, or None
    after one line on stderr naming the variable, its value and what is allowed."""
    from pipeline.engine.config import ConfigError, Settings, check_data_dir

    try:
        settings = Settings.from_env(credentials=args.command not in SOURCELESS_COMMANDS)
        writes = args.command in WRITING_COMMANDS or (args.command == "report" and args.output is None)
        check_data_dir(settings.data_dir, writable=writes)
    except ConfigError as error:
        print(f"pmw {args.command}: {error}", file=sys.stderr)
        return None
    return settings


def _run_backfill(args: argparse.Namespace, settings: Settings) -> int:
    from pipeline.cli.backfill import run_backfill
    from pipeline.defs.resources import PipelineResource

    if args.allow_shrink:
        settings = replace(settings, allow_shrink=True)
    try:
        reports = run_backfill(args.platform, args.start, args.end or args.start, args.assets,
                               resource=PipelineResource(base_settings=settings), verbose=args.verbose,
                               progress_every_s=args.progress_every)
    except ValueError as error:
        print(f"pmw backfill: {error}", file=sys.stderr)
        return 2
    return 0 if all(r.ok for r in reports) else 1


def _run_demo(args: argparse.Namespace, settings: Settings) -> int:
    from pipeline.cli.demo import run_demo
    from pipeline.cli.demo_world import demo_dagster_home, demo_world
    from pipeline.cli.sandbox import world_config

    world = demo_world(world_config(args), args.days)
    try:
        return run_demo(world, days=args.days, base=settings, home=demo_dagster_home(settings.data_dir))
    except ValueError as error:  # a setting (ConfigError) or a day without a partition
        print(f"pmw demo: {error}", file=sys.stderr)
        return 2


def _run_sql(args: argparse.Namespace, settings: Settings) -> int:
    from pipeline.cli.sql import run_sql
    from pipeline.defs.resources import PipelineResource
    from pipeline.engine.warehouse.project import SqlProjectError

    try:
        return 0 if run_sql(args.select, PipelineResource(base_settings=settings)) else 1
    except SqlProjectError as error:
        print(f"pmw sql: {error}", file=sys.stderr)
        return 2


def _run_restore(args: argparse.Namespace, settings: Settings) -> int:
    from pipeline.cli.restore import run_restore

    return 0 if run_restore(settings, args.table, args.platform, args.date, args.version, args.list) else 1


def _run_verify(_args: argparse.Namespace, settings: Settings) -> int:
    from pipeline.cli.verify import run_verify

    return 0 if run_verify(settings) else 1


def _run_status(args: argparse.Namespace, settings: Settings) -> int:
    from pipeline.cli.status import run_status
    from pipeline.engine.config import ConfigError

    try:
        return 0 if run_status(settings, args.days, args.json) else 1
    except ConfigError as error:  # DAGSTER_HOME, read only when the instance is
        print(f"pmw status: {error}", file=sys.stderr)
        return 2


def _run_report(args: argparse.Namespace, settings: Settings) -> int:
    from pipeline.cli.report import run_report

    return 0 if run_report(settings, args.days, args.output or settings.data_dir / "report.html") else 1


def _run_bench(args: argparse.Namespace) -> int:
    """The benchmarks are not part of the installed package: they run from the checkout pipeline comes from."""
    checkout = Path(__file__).resolve().parents[2]
    if not (checkout / "benchmarks" / "__main__.py").is_file():
        print("pmw bench: benchmarks/ is only in a checkout of pm-warehouse (pip install -e . from one)",
              file=sys.stderr)
        return 2
    sys.path.insert(0, str(checkout))
    from benchmarks.__main__ import main as run_benchmarks

    return run_benchmarks(["--quick"] * args.quick + (["--only", args.only] if args.only else []))


def main(argv: Sequence[str] | None = None) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("pipeline").setLevel(logging.INFO)
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per request drowns the progress
    arguments = list(sys.argv[1:] if argv is None else argv)
    args = build_parser(arguments[0] if arguments else None).parse_args(arguments)
    unconfigured: dict[str, Callable[[argparse.Namespace], int]] = {
        "sandbox": _run_sandbox, "normalize": normalize_cli.run, "bench": _run_bench}
    if args.command in unconfigured:
        return unconfigured[args.command](args)
    configured: dict[str, Callable[[argparse.Namespace, Settings], int]] = {
        "backfill": _run_backfill, "demo": _run_demo, "sql": _run_sql, "restore": _run_restore,
        "verify": _run_verify, "status": _run_status, "report": _run_report, "query": _run_query,
        "shell": _run_shell}
    settings = _configured(args)
    return 2 if settings is None else configured[args.command](args, settings)


if __name__ == "__main__":
    sys.exit(main())
