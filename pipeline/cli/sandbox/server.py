"""`pmw sandbox`'s server: the emulator served over HTTP until a stop signal."""

from __future__ import annotations

import argparse
import signal
from collections.abc import Iterator
from contextlib import contextmanager

from pipeline.cli.sandbox.options import world_config
from pmw_sandbox.app import DEFAULT_API_KEYS, STRICT_RATE_LIMIT_PER_MIN, SandboxApp, SandboxConfig
from pmw_sandbox.server import SandboxServer


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
