"""The sandbox over real HTTP on loopback: the server class and the `pmw sandbox` command."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

import httpx

from pmw_sandbox import DEFAULT_API_KEYS, SandboxApp, SandboxConfig
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


def test_pmw_sandbox_command_serves_until_stopped() -> None:
    port = _free_port()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pipeline.cli.main",
            "sandbox",
            "--port",
            str(port),
            "--strict",
            "--end",
            WORLD.end.isoformat(),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            try:
                response = httpx.get(f"{url}/health", headers={"X-API-Key": DEFAULT_API_KEYS[0]}, timeout=1)
                break
            except httpx.TransportError:
                assert process.poll() is None, process.stdout.read() if process.stdout else ""
                assert time.monotonic() < deadline, "pmw sandbox did not start listening"
                time.sleep(0.1)
        assert response.status_code == 200
        codes = [httpx.get(f"{url}/health", headers={"X-API-Key": DEFAULT_API_KEYS[0]}).status_code for _ in range(100)]
        assert codes.count(429) == 1 and codes[-1] == 429  # the 101st request of the minute
    finally:
        process.send_signal(signal.SIGINT)
        try:
            output, _ = process.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()  # never leave the server behind, whatever happened
            process.communicate()
            raise
    assert f"serving the unified API at http://127.0.0.1:{port}" in output
    assert DEFAULT_API_KEYS[0] not in output  # keys are never printed or logged
