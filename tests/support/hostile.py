"""A hostile HTTP server on 127.0.0.1 in front of a sandbox, for the faults the sandbox cannot express.

Each request is answered by the sandbox first; a `Fault` then sees the request and that answer and decides
what the client really gets: the answer as it is, another answer (an HTML error page, a rewritten body), an
answer cut off mid-body, or an answer only after a delay. Faults are deterministic in the request number.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import orjson

from pmw_sandbox.app import SandboxApp


@dataclass
class Request:
    number: int  # 0, 1, 2, ... in arrival order
    path: str
    query: dict[str, str]


@dataclass
class Answer:
    status: int
    body: bytes
    headers: dict[str, str] = field(default_factory=lambda: {"content-type": "application/json"})
    cut_at: int | None = None  # send the full Content-Length, then only this many bytes, then close
    delay_s: float = 0.0
    drip_s: float = 0.0  # after the headers, send the body a byte at a time, this long apart

    def json(self) -> Any:
        return orjson.loads(self.body)

    def with_json(self, body: Any) -> Answer:
        """This answer with `body` as its JSON (through the standard library's encoder when orjson refuses it:
        orjson writes nothing nested deeper than 254 levels, and some faults are)."""
        try:
            return Answer(self.status, orjson.dumps(body), self.headers)
        except orjson.JSONEncodeError:
            return Answer(self.status, json.dumps(body).encode(), self.headers)


Fault = Callable[[Request, Answer], Answer]


def no_fault(_request: Request, answer: Answer) -> Answer:
    return answer


class HostileServer:
    """The sandbox behind a fault, served on loopback; `fault` may be swapped between runs."""

    def __init__(self, app: SandboxApp, fault: Fault = no_fault) -> None:
        self.app, self.fault = app, fault
        self.requests = 0
        self._lock = threading.Lock()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.httpd.daemon_threads = True
        self._thread = threading.Thread(target=self.httpd.serve_forever, name="hostile", daemon=True)

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> HostileServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self._thread.join(timeout=5)

    def _next_number(self) -> int:
        with self._lock:
            number, self.requests = self.requests, self.requests + 1
            return number

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body go out at once (see tests/support/loopback.py)

            def do_GET(self) -> None:
                url = urlsplit(self.path)
                query = parse_qsl(url.query, keep_blank_values=True)
                served = server.app.handle("GET", url.path, query, dict(self.headers.items()))
                request = Request(server._next_number(), url.path, dict(query))
                answer = server.fault(request, Answer(served.status, served.body, dict(served.headers)))
                if answer.delay_s:
                    time.sleep(answer.delay_s)
                self.send_response(answer.status)
                for name, value in answer.headers.items():
                    if name.lower() != "content-length":
                        self.send_header(name, value)
                self.send_header("Content-Length", str(len(answer.body)))
                self.end_headers()
                try:
                    if answer.drip_s:
                        self.wfile.flush()
                        for byte in answer.body:
                            time.sleep(answer.drip_s)
                            self.wfile.write(bytes([byte]))
                            self.wfile.flush()
                        return
                    if answer.cut_at is None:
                        self.wfile.write(answer.body)
                        return
                    self.wfile.write(answer.body[: answer.cut_at])
                    self.wfile.flush()
                    self.connection.shutdown(socket.SHUT_RDWR)
                    self.close_connection = True
                except (BrokenPipeError, ConnectionResetError):  # the client gave up first (its timeout)
                    self.close_connection = True

            def log_message(self, format: str, *args: object) -> None:
                pass

        return Handler
