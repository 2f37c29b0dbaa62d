"""`pmw demo`: its arguments (the sandbox world's among them), and the run that prepares the world then runs the
pipeline end to end on it."""

from __future__ import annotations

import argparse

from pipeline.cli.common.arguments import Subparsers, positive
from pipeline.cli.common.failures import CommandError
from pipeline.cli.common.settings import configured


def add_parser(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser("demo", help="run the pipeline end to end on the offline sandbox",
                                   later_options=_world_options)
    parser.add_argument("--days", type=positive, default=2, help="how many recent days to pull (default 2)")


def _world_options(parser: argparse.ArgumentParser) -> None:
    from pipeline.cli.sandbox.options import add_world_options  # the emulator: loaded for this command only

    add_world_options(parser)


def run(args: argparse.Namespace) -> int:
    settings = configured(credentials=False, writes=True)
    from pipeline.cli.demo.end_to_end import run_demo
    from pipeline.cli.demo.world import demo_world
    from pipeline.cli.sandbox.options import world_config

    world = demo_world(world_config(args), args.days)
    try:
        return run_demo(world, days=args.days, base=settings)
    except ValueError as error:  # a setting (ConfigError) or a day without a partition
        raise CommandError(str(error)) from None
