"""A raw HTTP server on 127.0.0.1 for the deadline tests: each connection answered, on a thread of its own, by a
function that writes to the socket what and when it likes (a status line, then a header a byte at a time; a body
trickled; nothing at all). Stopped, its sockets closed, on exit."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress

Answer = Callable[[socket.socket, threading.Event], None]  # (the connection, set when the server stops)


def request_head(connection: socket.socket) -> bytes:
    """The request line and headers (what follows them, a PUT's body, is left unread)."""
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = connection.recv(65536)
        if not chunk:
            break
        head += chunk
    return head


@contextmanager
def raw_http_server(answer: Answer) -> Iterator[tuple[str, list[str]]]:
    """The server's URL, and the methods of the requests it took (one per connection; a connection closed before its
    request line, as a client at its deadline may leave one, took none)."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.1)
    stop, threads, methods = threading.Event(), [], []

    def serve_one(connection: socket.socket) -> None:
        with connection, suppress(OSError):  # OSError: the client gave up and closed
            head = request_head(connection)
            if not head:
                return
            methods.append(head.partition(b" ")[0].decode())
            answer(connection, stop)

    def serve() -> None:
        while not stop.is_set():
            try:
                connection, _ = listener.accept()
            except TimeoutError:
                continue
            threads.append(thread := threading.Thread(target=serve_one, args=(connection,), daemon=True))
            thread.start()

    acceptor = threading.Thread(target=serve, daemon=True)
    acceptor.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}", methods
    finally:
        stop.set()
        acceptor.join(5)
        for thread in threads:
            thread.join(5)
        listener.close()
