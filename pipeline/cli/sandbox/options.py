"""The options of `pmw sandbox`, and the sandbox world's options that `pmw demo` shares; they read their defaults
from the emulator, so they are added only when one of those two commands is parsed."""

from __future__ import annotations

import argparse

from pipeline.cli.common.arguments import day, positive
from pmw_sandbox.app import SandboxConfig
from pmw_sandbox.catalogue import WorldConfig
from pmw_sandbox.faults import Faults
from pmw_sandbox.readings import Readings


def _faults(text: str) -> Faults:
    try:
        return Faults.parse(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _window(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a number of seconds above 0, got {text!r}")
    return value


def _readings(text: str) -> Readings:
    try:
        return Readings.parse(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def add_world_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--seed", type=int, default=WorldConfig.seed, help="world seed (default %(default)s)")
    parser.add_argument("--end", type=day, default=None, help="last day of the world (default: yesterday, UTC)")
    parser.add_argument(
        "--world-days",
        type=positive,
        default=WorldConfig.days,
        help="days of history in the world (default %(default)s)",
    )


def world_config(args: argparse.Namespace) -> WorldConfig:
    return WorldConfig(seed=args.seed, end=args.end, days=args.world_days)


def add_sandbox_options(sandbox: argparse.ArgumentParser) -> None:
    """The options of `pmw sandbox`."""
    sandbox.add_argument("--host", default="127.0.0.1", help="address to listen on (default: loopback only)")
    sandbox.add_argument("--port", type=int, default=8765, help="port (default %(default)s)")
    sandbox.add_argument(
        "--strict",
        action="store_true",
        help="enforce the real service's 100 requests a minute (per --rate-window if given)",
    )
    sandbox.add_argument(
        "--rate-limit", type=positive, default=None, help="requests per key in a minute (per --rate-window if given)"
    )
    sandbox.add_argument(
        "--rate-window",
        type=_window,
        default=SandboxConfig.rate_window_s,
        help="seconds of the sliding window the rate limit counts in (default %(default)g; tests shorten it)",
    )
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
    add_world_options(sandbox)
