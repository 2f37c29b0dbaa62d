"""`pmw`: the command line of pm-warehouse. The commands are listed here; each module has `add_parser(subparsers)`
and `run(args) -> int`, and fails by raising CommandError, printed here as one line on stderr."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from importlib.metadata import version
from types import ModuleType

from pipeline.cli import bench, links, normalize, restore, shell, verify
from pipeline.cli.backfill import command as backfill
from pipeline.cli.common.arguments import CommandParser
from pipeline.cli.common.failures import FAILED, OUTSIDE_ERRORS, CommandError, outside
from pipeline.cli.demo import command as demo
from pipeline.cli.query import command as query
from pipeline.cli.report import command as report
from pipeline.cli.sandbox import command as sandbox
from pipeline.cli.sql import command as sql
from pipeline.cli.status import command as status

DISTRIBUTION = "pm-warehouse"  # the package's name in pyproject.toml, under which its version is installed
# Each command's module, by the name its parser is added under (the order of `pmw --help`).
COMMANDS: dict[str, ModuleType] = {
    "sandbox": sandbox, "backfill": backfill, "demo": demo, "sql": sql, "links": links, "restore": restore,
    "verify": verify, "status": status, "report": report, "normalize": normalize, "query": query, "shell": shell,
    "bench": bench,
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pmw", description="pm-warehouse: prediction-market data pipeline")
    parser.add_argument("--version", action="version", version=f"%(prog)s {version(DISTRIBUTION)}")
    subparsers = parser.add_subparsers(dest="command", required=True, parser_class=CommandParser)
    for command in COMMANDS.values():
        command.add_parser(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("pipeline").setLevel(logging.INFO)
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per request drowns the progress
    args = build_parser().parse_args(argv)
    try:
        return COMMANDS[args.command].run(args)
    except CommandError as error:
        print(f"pmw {args.command}: {error}", file=sys.stderr)
        return error.status
    except OUTSIDE_ERRORS as error:  # a full disk, the bucket's quota, no credentials: said, not traced
        print(f"pmw {args.command}: {outside(error)}", file=sys.stderr)
        return FAILED


if __name__ == "__main__":
    sys.exit(main())
