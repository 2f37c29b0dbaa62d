"""`pmw`: the command line of pm-warehouse."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from datetime import date
from pathlib import Path

from pipeline.cli import normalize as normalize_cli
from pipeline.engine.schema import MARKET_PLATFORMS, TABLES
from pmw_sandbox.app import SandboxApp, SandboxConfig
from pmw_sandbox.catalogue import WorldConfig
from pmw_sandbox.faults import Faults
from pmw_sandbox.readings import Readings


def _day(text: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a day as YYYY-MM-DD, got {text!r}") from None


def _faults(text: str) -> Faults:
    try:
        return Faults.parse(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _readings(text: str) -> Readings:
    try:
        return Readings.parse(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a number of at least 1, got {value}")
    return value


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


def _add_world_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--seed", type=int, default=WorldConfig.seed, help="world seed (default %(default)s)")
    parser.add_argument("--end", type=_day, default=None, help="last day of the world (default: yesterday, UTC)")
    parser.add_argument(
        "--world-days",
        type=_positive,
        default=WorldConfig.days,
        help="days of history in the world (default %(default)s)",
    )


def _world_config(args: argparse.Namespace) -> WorldConfig:
    return WorldConfig(seed=args.seed, end=args.end, days=args.world_days)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pmw", description="pm-warehouse: prediction-market data pipeline")
    commands = parser.add_subparsers(dest="command", required=True)

    sandbox = commands.add_parser("sandbox", help="serve the offline emulator of the unified API")
    sandbox.add_argument("--host", default="127.0.0.1", help="address to listen on (default: loopback only)")
    sandbox.add_argument("--port", type=int, default=8765, help="port (default %(default)s)")
    sandbox.add_argument("--strict", action="store_true", help="enforce the real service's 100 requests a minute")
    sandbox.add_argument("--rate-limit", type=_positive, default=None, help="requests a minute per key")
    sandbox.add_argument("--cursor-ttl", type=float, default=300.0, help="cursor lifetime in seconds")
    sandbox.add_argument(
        "--faults",
        type=_faults,
        default=Faults(),
        help="fault switches, e.g. error_rate=0.05,burst_429_every=40,burst_429_length=3",
    )
    sandbox.add_argument(
        "--readings",
        type=_readings,
        default=Readings(),
        help="readings of the spec where it is silent (docs/api-readings.md), e.g. trades_order=oldest_first",
    )
    sandbox.add_argument(
        "--api-key",
        action="append",
        default=None,
        help="accepted API key (repeatable; default: the built-in sandbox keys)",
    )
    _add_world_options(sandbox)

    backfill = commands.add_parser(
        "backfill",
        help="materialise (platform, day) partitions through Dagster",
        description="Materialise (platform, day) partitions through Dagster, with their checks; a line per "
                    "partition, then the requests per endpoint, then a FAILED PARTITION or FAILED CHECK line for "
                    "each failure (a failed check's partition still lands).",
        epilog="exit status: 0 every partition landed and no check of severity ERROR failed; 1 a partition "
               "failed or a check of severity ERROR failed; 2 bad arguments or configuration.",
    )
    backfill.add_argument("--platform", required=True, type=_platform_list,
                          help="comma list of platforms, e.g. polymarket,kalshi")
    backfill.add_argument("--start", required=True, type=_day, help="first day, YYYY-MM-DD")
    backfill.add_argument("--end", type=_day, default=None, help="last day (default: the start day)")
    backfill.add_argument("--assets", type=_asset_list, default=None,
                          help="comma list of assets (default: all five)")

    demo = commands.add_parser("demo", help="run the pipeline end to end on the offline sandbox")
    demo.add_argument("--days", type=_positive, default=2, help="how many recent days to pull (default 2)")
    _add_world_options(demo)

    sql = commands.add_parser("sql", help="build the dbt_like_sql models and run their SQL tests")
    sql.add_argument("--select", action="extend", type=_selector_list, default=[], metavar="MODEL",
                     help="model(s) to build, e.g. marts.market_daily or market_daily; +MODEL adds its upstream "
                          "models, MODEL+ its downstream models; repeatable or comma separated (default: all)")
    normalize_cli.add_parser(commands)

    bench = commands.add_parser("bench", help="run the benchmarks of this checkout (see benchmarks/README.md)")
    bench.add_argument("--quick", action="store_true", help="tiny sizes: proves the benchmarks still run (CI)")
    bench.add_argument("--only", default=None, help="comma list of normalisation, memory, requests, queries")
    return parser


def _run_sandbox(args: argparse.Namespace) -> int:
    from pmw_sandbox.app import DEFAULT_API_KEYS, STRICT_RATE_LIMIT_PER_MIN
    from pmw_sandbox.server import SandboxServer

    rate = args.rate_limit or (STRICT_RATE_LIMIT_PER_MIN if args.strict else None)
    keys = tuple(args.api_key) if args.api_key else DEFAULT_API_KEYS
    config = SandboxConfig(
        world=_world_config(args),
        api_keys=keys,
        rate_limit_per_min=rate,
        cursor_ttl_s=args.cursor_ttl,
        faults=args.faults,
        readings=args.readings,
    )
    app = SandboxApp(config)
    server = SandboxServer(app, args.host, args.port)
    world = config.world
    print(f"pmw sandbox: serving the unified API at {server.url}", flush=True)
    print(f"  world: seed {world.seed}, {world.start_day} .. {world.end_day}", flush=True)
    print(
        f"  rate limit: {f'{rate} requests a minute per key' if rate else 'none'}; "
        f"{len(keys)} accepted key(s), send one as the X-API-Key header",
        flush=True,
    )
    print(f"  readings of the spec: {config.readings.label()}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        print("pmw sandbox: stopped", flush=True)
    finally:
        server.httpd.server_close()
    return 0


def _run_backfill(args: argparse.Namespace) -> int:
    from pipeline.cli.backfill import run_backfill
    from pipeline.engine.config import ConfigError, Settings

    try:
        Settings.from_env()
    except ConfigError as error:
        print(f"pmw backfill: {error}", file=sys.stderr)
        return 2
    try:
        reports = run_backfill(args.platform, args.start, args.end or args.start, args.assets)
    except ValueError as error:
        print(f"pmw backfill: {error}", file=sys.stderr)
        return 2
    return 0 if all(r.ok for r in reports) else 1


def _run_demo(args: argparse.Namespace) -> int:
    from pipeline.cli.demo import run_demo

    return run_demo(_world_config(args), days=args.days)


def _run_sql(args: argparse.Namespace) -> int:
    from pipeline.cli.sql import run_sql
    from pipeline.engine.config import ConfigError
    from pipeline.engine.sql.project import SqlProjectError

    try:
        return 0 if run_sql(args.select) else 1
    except (ConfigError, SqlProjectError) as error:
        print(f"pmw sql: {error}", file=sys.stderr)
        return 2


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
    args = build_parser().parse_args(argv)
    handlers = {"sandbox": _run_sandbox, "backfill": _run_backfill, "demo": _run_demo, "sql": _run_sql,
                "normalize": normalize_cli.run, "bench": _run_bench}
    return handlers[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
