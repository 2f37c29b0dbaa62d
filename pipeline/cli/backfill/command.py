"""`pmw backfill`: its arguments, and the run that checks the settings then materialises the partitions."""

from __future__ import annotations

import argparse
from dataclasses import replace

from pipeline.cli.backfill.progress import PLAIN_EVERY_S
from pipeline.cli.common.arguments import Subparsers, day, seconds
from pipeline.cli.common.failures import CommandError
from pipeline.cli.common.settings import configured
from pipeline.engine.schema import MARKET_PLATFORMS, TABLES


def add_parser(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "backfill",
        help="materialise (platform, day) partitions through Dagster",
        description="Materialise (platform, day) partitions through Dagster, with their checks; a line per "
                    "partition, then the requests per endpoint, then a FAILED PARTITION or FAILED CHECK line for "
                    "each failure (a failed check's partition still lands). The runs are recorded in DAGSTER_HOME's "
                    "instance, else in PMW_DATA_DIR/dagster_home. Then, unless a Dagster daemon runs on that "
                    "instance (its sensor rebuilds them), the SQL models that read what landed are rebuilt. Ctrl-C "
                    "or SIGTERM abandons the running partition's table (a file lands whole or not at all), starts "
                    "nothing new and names each partition not finished.",
        epilog="exit status: 0 every partition landed and no check of severity ERROR failed (and the models "
               "rebuilt, when they were); 1 a partition failed or a check of severity ERROR failed, or a platform "
               "was held (the service's /platforms reports it unavailable: one HELD PLATFORM line), or a model "
               "failed; 2 bad arguments or configuration; 130 stopped by Ctrl-C (SIGINT), 143 by SIGTERM.",
    )
    parser.add_argument("--platform", required=True, type=_platform_list,
                        help="comma list of platforms, e.g. polymarket,kalshi")
    parser.add_argument("--start", required=True, type=day, help="first day, YYYY-MM-DD")
    parser.add_argument("--end", type=day, default=None, help="last day (default: the start day)")
    parser.add_argument("--assets", type=_asset_list, default=None,
                        help="comma list of assets (default: all five)")
    parser.add_argument("--missing", action="store_true",
                        help="run only the partitions' tables that have not landed (after an interrupted backfill); "
                             "say how many partitions were skipped")
    parser.add_argument("--allow-shrink", action="store_true",
                        help="let reruns replace landed partitions with fewer rows, or none (a deliberate "
                             "correction; as PMW_ALLOW_SHRINK=1)")
    parser.add_argument("--verbose", action="store_true",
                        help="also print Dagster's warnings and errors, with their stack traces (by default "
                             "each partition's line names what went wrong)")
    parser.add_argument("--progress-every", type=seconds, default=PLAIN_EVERY_S, metavar="SECONDS",
                        help="when stderr is not a terminal, print a progress line this often (default "
                             f"{PLAIN_EVERY_S:g}); on a terminal a status line is redrawn in place instead")
    parser.add_argument("--no-models", action="store_true",
                        help="do not rebuild the SQL models afterwards (when no Dagster daemon runs, they are "
                             "rebuilt as `pmw sql` does)")


def run(args: argparse.Namespace) -> int:
    settings = configured(writes=True)
    if args.allow_shrink:
        settings = replace(settings, allow_shrink=True)
    from pipeline.cli.backfill.partitions import run_backfill  # Dagster and the code location: after the check
    from pipeline.cli.common.instance import pmw_instance
    from pipeline.cli.sql.models import rebuild_fed_models
    from pipeline.defs.common.resources import PipelineResource

    resource = PipelineResource(base_settings=settings)
    try:
        reports = run_backfill(args.platform, args.start, args.end or args.start, args.assets, resource=resource,
                               verbose=args.verbose, progress_every_s=args.progress_every, missing=args.missing)
        landed = {table for report in reports for table in report.rows}
        models_built = args.no_models or rebuild_fed_models(landed, resource, pmw_instance(settings.data_dir))
    except ValueError as error:  # a day without a partition, or an unusable SQL file (SqlProjectError)
        raise CommandError(str(error)) from None
    return 0 if all(r.ok for r in reports) and models_built else 1


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
