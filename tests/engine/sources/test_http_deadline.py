"""PMW_HTTP_DEADLINE_S bounds a whole request (connect, status line, headers and body) on a real socket."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress

import pytest

from pipeline.engine.config import Secret
from pipeline.engine.sources.http import ApiError, HttpLayer

KEY = "sk-live-DO-NOT-LEAK-0042"
DEADLINE_S = 0.5
TRICKLE_S = 0.1  # between two bytes: well within the timeout, so only the deadline can end the wait
BODY = b'{"markets": [], "cursor": null, "more": false}'  # 46 bytes: 4.6 s at this pace


@contextmanager
def _raw_server(answer: Callable[[socket.socket, threading.Event], None]) -> Iterator[tuple[str, list[int]]]:
    """A one-thread HTTP server on 127.0.0.1 that answers each connection with `answer`; yields its URL and the
    count of connections taken; stopped (and its sockets closed) on exit."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.1)
    stop, accepted = threading.Event(), [0]

    def serve() -> None:
        while not stop.is_set():
            try:
                connection, _ = listener.accept()
            except TimeoutError:
                continue
            accepted[0] += 1
            with connection:
                connection.recv(65536)  # the request
                with suppress(OSError):  # the client gave up and closed
                    answer(connection, stop)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}", accepted
    finally:
        stop.set()
        thread.join(5)
        listener.close()


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
    with _raw_server(answer) as (url, accepted):
        if proxied:
            monkeypatch.setenv("HTTP_PROXY", url)
        base = "http://api.invalid" if proxied else url
        layer = HttpLayer(base, api_key=Secret(KEY), timeout_s=0.3, deadline_s=DEADLINE_S, max_attempts=4)
        started = time.monotonic()
        with pytest.raises(ApiError) as caught, layer:
            layer.get_json("/markets/KX-1/orderbook")
        elapsed = time.monotonic() - started
        taken = accepted[0]
    message = str(caught.value)
    assert elapsed < DEADLINE_S + 5, elapsed
    assert taken == 1, "a request that passed its deadline is not tried again (one try holds the run that long)"
    assert message.startswith("GET /markets/KX-1/orderbook: no whole answer within the deadline of 0.5 s "
                              "(PMW_HTTP_DEADLINE_S)"), message
    assert awaited in message and "\n" not in message and KEY not in message
