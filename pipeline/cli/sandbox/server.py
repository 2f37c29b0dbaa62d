"""`pmw sandbox` (the emulator served over HTTP) and the world options it shares with `pmw demo`.

Imported only for those two commands, so that the rest of `pmw` never loads the emulator."""

from __future__ import annotations

import argparse
import signal
from collections.abc import Iterator
from contextlib import contextmanager

from pipeline.cli.arguments import day, positive
from pmw_sandbox.app import DEFAULT_API_KEYS, STRICT_RATE_LIMIT_PER_MIN, SandboxApp, SandboxConfig
from pmw_sandbox.catalogue import WorldConfig
from pmw_sandbox.faults import Faults
from pmw_sandbox.readings import Readings
from pmw_sandbox.server import SandboxServer


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


def serve(args: argparse.Namespace) -> int:
    """Serve the emulator until interrupted."""
    rate = args.rate_limit or (STRICT_RATE_LIMIT_PER_MIN if args.strict else None)
    keys = tuple(args.api_key) if args.api_key else DEFAULT_API_KEYS
    config = SandboxConfig(
        world=world_config(args),
        api_keys=keys,
        rate_limit_per_min=rate,
        rate_window_s=args.rate_window,
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
        f"  rate limit: {f'{rate} requests {_per(config.rate_window_s)} per key' if rate else 'none'}; "
        f"{len(keys)} accepted key(s), send one as the X-API-Key header",
        flush=True,
    )
    print(f"  readings of the spec: {config.readings.label()}", flush=True)
    try:
        with _stopped_by(signal.SIGINT, signal.SIGTERM):
            server.serve_forever()
    except _Stop:
        print("pmw sandbox: stopped", flush=True)
    finally:
        server.httpd.server_close()
    return 0


class _Stop(BaseException):
    """A stop signal arrived. A BaseException, like KeyboardInterrupt: the server handles each request inside
    `except Exception` (printing the error and serving on), so a stop that arrived there would be swallowed."""


@contextmanager
def _stopped_by(*signals: signal.Signals) -> Iterator[None]:
    """Raise _Stop in the main thread on any of `signals`, whatever their disposition was: a command started in
    the background by a shell inherits an ignored SIGINT, and SIGTERM (a service manager's stop) would end the
    process without a word."""
    def stop(_number: int, _frame: object) -> None:
        raise _Stop

    previous = {number: signal.signal(number, stop) for number in signals}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def _per(window_s: float) -> str:
    return "a minute" if window_s == 60.0 else f"per {window_s:g} s"
