"""`pmw sandbox`: serve the offline emulator of the unified API (its options and the server load the emulator,
for this command only)."""

from __future__ import annotations

import argparse

from pipeline.cli.common.arguments import Subparsers


def add_parser(subparsers: Subparsers) -> None:
    subparsers.add_parser("sandbox", help="serve the offline emulator of the unified API", later_options=_options)


def _options(parser: argparse.ArgumentParser) -> None:
    from pipeline.cli.sandbox.options import add_sandbox_options

    add_sandbox_options(parser)


def run(args: argparse.Namespace) -> int:
    from pipeline.cli.sandbox.server import serve

    return serve(args)
