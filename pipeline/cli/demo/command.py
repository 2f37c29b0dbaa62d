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
    configured(credentials=False, writes=True)
    from pipeline.cli.demo.world import demo_world, prepare_demo_environment
    from pipeline.cli.sandbox.options import world_config

    world = demo_world(world_config(args), args.days)
    prepare_demo_environment(world)  # before the definitions load: their partitions start at the world's first day
    from pipeline.cli.demo.end_to_end import run_demo

    try:
        return run_demo(world, days=args.days)
    except ValueError as error:  # a setting (ConfigError) or a day without a partition
        raise CommandError(str(error)) from None
