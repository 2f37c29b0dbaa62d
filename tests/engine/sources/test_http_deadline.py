"""PMW_HTTP_DEADLINE_S bounds a whole request (connect, status line, headers and body) on a real socket."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable

import pytest

from pipeline.engine.config import Secret
from pipeline.engine.sources.http import ApiError, HttpLayer
from tests.support.raw_http import raw_http_server

KEY = "sk-live-DO-NOT-LEAK-0042"
DEADLINE_S = 0.5
TRICKLE_S = 0.1  # between two bytes: well within the timeout, so only the deadline can end the wait
BODY = b'{"markets": [], "cursor": null, "more": false}'  # 46 bytes: 4.6 s at this pace


def _trickle(connection: socket.socket, stop: threading.Event, data: bytes) -> None:
    for byte in data:
        if stop.wait(TRICKLE_S):
            return
        connection.sendall(bytes([byte]))


def _trickled_headers(connection: socket.socket, stop: threading.Event) -> None:
    """The status line at once, then a header one byte at a time (40 bytes: 4 s at this pace), then the body."""
    connection.sendall(b"HTTP/1.1 200 OK\r\n")
    _trickle(connection, stop, b"X-Slow: " + b"y" * 30 + b"\r\n")
    connection.sendall(b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(BODY), BODY))


def _trickled_body(connection: socket.socket, stop: threading.Event) -> None:
    connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(BODY))
    _trickle(connection, stop, BODY)


@pytest.mark.parametrize(("answer", "awaited", "proxied"), [
    (_trickled_headers, "the status line and headers", False),
    (_trickled_body, "the body", False),
    (_trickled_headers, "the status line and headers", True),  # the server as the environment's proxy (HTTP_PROXY)
])
def test_a_trickling_answer_fails_at_the_deadline_once_naming_the_path_and_the_setting(
        answer: Callable[[socket.socket, threading.Event], None], awaited: str, proxied: bool,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 39, point 2: a server sending a header byte every 2 s held a request 150 s past a 10-s deadline."""
    for name in ("NO_PROXY", "no_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    with raw_http_server(answer) as (url, requests):
        if proxied:
            monkeypatch.setenv("HTTP_PROXY", url)
        base = "http://api.invalid" if proxied else url
        layer = HttpLayer(base, api_key=Secret(KEY), timeout_s=0.3, deadline_s=DEADLINE_S, max_attempts=4)
        started = time.monotonic()
        with pytest.raises(ApiError) as caught, layer:
            layer.get_json("/markets/KX-1/orderbook")
        elapsed = time.monotonic() - started
        taken = len(requests)
    message = str(caught.value)
    assert elapsed < DEADLINE_S + 5, elapsed
    assert taken == 1, "a request that passed its deadline is not tried again (one try holds the run that long)"
    assert message.startswith("GET /markets/KX-1/orderbook: no whole answer within the deadline of 0.5 s "
                              "(PMW_HTTP_DEADLINE_S)"), message
    assert awaited in message and "\n" not in message and KEY not in message
