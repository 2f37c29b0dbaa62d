"""`pmw sql`: its arguments, and the run that checks the settings then builds the selected models."""

from __future__ import annotations

import argparse

from pipeline.cli.common.arguments import Subparsers
from pipeline.cli.common.failures import CommandError
from pipeline.cli.common.settings import configured


def add_parser(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser("sql", help="build the dbt_like_sql models and run their SQL tests")
    parser.add_argument("--select", action="extend", type=_selector_list, default=[], metavar="MODEL",
                        help="model(s) to build, e.g. marts.market_daily or market_daily; +MODEL adds its upstream "
                             "models, MODEL+ its downstream models; repeatable or comma separated (default: all)")


def run(args: argparse.Namespace) -> int:
    settings = configured(writes=True)
    from pipeline.cli.sql.models import run_sql  # Dagster and the code location: after the check
    from pipeline.defs.common.resources import PipelineResource
    from pipeline.engine.warehouse.project import SqlProjectError

    try:
        return 0 if run_sql(args.select, PipelineResource(base_settings=settings)) else 1
    except SqlProjectError as error:
        raise CommandError(str(error)) from None


def _selector_list(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]
