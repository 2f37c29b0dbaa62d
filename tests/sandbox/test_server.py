"""The sandbox over real HTTP on loopback: the server class and the `pmw sandbox` command."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import pytest

from pipeline.cli.main import build_parser
from pipeline.cli.sandbox import server as sandbox_cli
from pipeline.engine.config import Secret
from pipeline.engine.sources.http import HttpLayer
from pmw_sandbox import DEFAULT_API_KEYS, SandboxApp, SandboxConfig
from pmw_sandbox.readings import Readings
from pmw_sandbox.server import SandboxServer
from tests.support.world import WORLD


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_server_serves_the_app_on_loopback() -> None:
    with SandboxServer(SandboxApp(SandboxConfig(world=WORLD)), port=0) as server:
        assert server.url.startswith("http://127.0.0.1:")
        with httpx.Client(base_url=server.url, headers={"X-API-Key": DEFAULT_API_KEYS[0]}) as c:
            body = c.get("/markets", params={"platform": "kalshi", "limit": 500}).json()
            assert body["pagination"]["limit"] == 250
            assert httpx.get(f"{server.url}/health").status_code == 401


def test_the_redirect_reading_over_http_is_followed_on_the_servers_origin() -> None:
    """`redirect=true` behind the real server: a 307 to the listing's trailing-slash path on the host asked, which
    the HTTP layer follows with the key, each hop a request."""
    app = SandboxApp(SandboxConfig(world=WORLD, readings=Readings(redirect=True)))
    with SandboxServer(app, port=0) as server, HttpLayer(server.url, api_key=Secret(DEFAULT_API_KEYS[0])) as layer:
        moved = httpx.get(f"{server.url}/markets", params={"platform": "kalshi"})
        assert moved.status_code == 307 and moved.headers["location"] == f"{server.url}/markets/?platform=kalshi"
        assert layer.get_json("/markets", {"platform": "kalshi", "limit": 5})["pagination"]["limit"] == 5
        assert layer.stats.requests == 2


@contextmanager
def _pmw_sandbox(*options: str, stop: signal.Signals = signal.SIGINT) -> Iterator[tuple[str, list[str]]]:
    """`pmw sandbox <options>` on a free port, once it answers: (its URL, a list that gets its output once it
    has been stopped with `stop`). It is started ignoring SIGINT, as a command started in the background by a
    shell is: it must stop on SIGINT all the same."""
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "pipeline.cli.main", "sandbox", "--port", str(port), *options,
         "--end", WORLD.end.isoformat()],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    )
    output: list[str] = []
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(f"{url}/", timeout=1)
                break
            except httpx.TransportError:
                assert process.poll() is None, process.stdout.read() if process.stdout else ""
                assert time.monotonic() < deadline, "pmw sandbox did not start listening"
                time.sleep(0.1)
        yield url, output
    finally:
        process.send_signal(stop)
        try:
            output.append(process.communicate(timeout=10)[0])
        except subprocess.TimeoutExpired:
            process.kill()  # never leave the server behind, whatever happened
            process.communicate()
            raise


def test_pmw_sandbox_command_serves_until_stopped() -> None:
    with _pmw_sandbox("--strict") as (url, output):
        response = httpx.get(f"{url}/health", headers={"X-API-Key": DEFAULT_API_KEYS[0]}, timeout=1)
        assert response.status_code == 200
        # One client (no TLS context per request), each request on its own connection: on a kept-alive one
        # the server's headers and body wait ~40 ms for the client's delayed ACK (Nagle; tests/support/loopback.py).
        headers = {"X-API-Key": DEFAULT_API_KEYS[0], "Connection": "close"}
        with httpx.Client(base_url=url, headers=headers) as client:
            codes = [client.get("/health").status_code for _ in range(100)]
        assert codes.count(429) == 1 and codes[-1] == 429  # the 101st request of the minute
    assert f"serving the unified API at {url}" in output[0]
    assert "rate limit: 100 requests a minute per key" in output[0]
    assert DEFAULT_API_KEYS[0] not in output[0]  # keys are never printed or logged
    assert "pmw sandbox: stopped" in output[0]  # on SIGINT, although it was started ignoring it


def test_pmw_sandbox_stops_on_sigterm_and_says_so() -> None:
    with _pmw_sandbox(stop=signal.SIGTERM) as (url, output):
        assert httpx.get(f"{url}/health", headers={"X-API-Key": DEFAULT_API_KEYS[0]}, timeout=1).status_code == 200
    assert "pmw sandbox: stopped" in output[0]


def test_pmw_sandbox_rate_window_sets_the_window_and_retry_after() -> None:
    """--rate-window: the limit counts in that many seconds, and a refusal's Retry-After stays inside them."""
    window_s = 30  # far from a minute, and longer than the few requests below can take on a loaded machine
    with _pmw_sandbox("--rate-limit", "5", "--rate-window", str(window_s)) as (url, output):
        started = time.monotonic()
        with httpx.Client(base_url=url, headers={"X-API-Key": DEFAULT_API_KEYS[0], "Connection": "close"}) as c:
            codes = [c.get("/health").status_code for _ in range(5)]
            refused = c.get("/health")
        elapsed_s = time.monotonic() - started
    assert codes == [200] * 5 and refused.status_code == 429
    assert f"of 5 requests per {window_s} s" in refused.json()["error"]["message"]
    assert window_s - elapsed_s <= int(refused.headers["Retry-After"]) <= window_s
    assert f"rate limit: 5 requests per {window_s} s per key" in output[0]


class _StoppedMidRequest(SandboxServer):
    """The command's server, with a stop signal that arrives while the main thread hands a request over."""

    def __init__(self, app: SandboxApp, host: str, port: int) -> None:
        super().__init__(app, host, port)
        handed_over = self.httpd.process_request

        def process_request(request: object, address: object) -> None:
            signal.raise_signal(signal.SIGTERM)  # its handler runs now, inside the server's `except Exception`
            handed_over(request, address)  # type: ignore[arg-type]

        self.httpd.process_request = process_request  # type: ignore[method-assign]


def test_pmw_sandbox_stops_on_a_signal_that_arrives_while_it_hands_a_request_over(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The server handles each request inside `except Exception`, printing the error and serving on: a stop
    raised there as an ordinary exception was swallowed, and `pmw sandbox` served on (seen once in CI)."""
    servers: list[SandboxServer] = []

    def server(app: SandboxApp, host: str, port: int) -> SandboxServer:
        servers.append(_StoppedMidRequest(app, host, port))
        return servers[-1]

    monkeypatch.setattr(sandbox_cli, "SandboxServer", server)
    args = build_parser().parse_args(["sandbox", "--port", str(_free_port()), "--end", WORLD.end_day.isoformat()])

    def request_then_give_up() -> None:
        while not servers:
            time.sleep(0.01)
        with contextlib.suppress(httpx.HTTPError):
            httpx.get(f"{servers[0].url}/health", timeout=2)
        time.sleep(5)
        servers[0].httpd.shutdown()  # a server that swallowed the stop is still serving: end the test

    client = threading.Thread(target=request_then_give_up, daemon=True)
    client.start()
    assert sandbox_cli.serve(args) == 0
    assert "pmw sandbox: stopped" in capsys.readouterr().out
