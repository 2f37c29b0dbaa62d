"""`pmw bench`: the benchmarks of the checkout this `pipeline` comes from, run as `python -m benchmarks` there.

The benchmarks are not part of the installed package; they run from the checkout (an editable install), in a
process of their own whose working directory is the checkout, as their own child processes do.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from pipeline.cli.common.arguments import Subparsers
from pipeline.cli.common.failures import CommandError

CHECKOUT = Path(__file__).resolve().parents[2]


def add_parser(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser("bench", help="run the benchmarks of this checkout (see benchmarks/README.md)")
    parser.add_argument("--quick", action="store_true", help="tiny sizes: proves the benchmarks still run (CI)")
    parser.add_argument("--only", default=None,
                        help="comma list of normalisation, memory, requests, windows, queries, snapshots, peers, "
                             "retention, links, catalogue, bookkeeping")


def run(args: argparse.Namespace) -> int:
    if not (CHECKOUT / "benchmarks" / "__main__.py").is_file():
        raise CommandError("benchmarks/ is only in a checkout of pm-warehouse (pip install -e . from one)")
    options = ["--quick"] * args.quick + (["--only", args.only] if args.only else [])
    return subprocess.run([sys.executable, "-m", "benchmarks", *options], cwd=CHECKOUT, check=False).returncode
