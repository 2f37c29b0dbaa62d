"""The sandbox behind a real HTTP server, on loopback unless told otherwise (`pmw sandbox`)."""

from __future__ import annotations

import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, urlsplit

from pmw_sandbox.app import SandboxApp

log = logging.getLogger("pmw_sandbox")


def _handler_for(app: SandboxApp) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "pmw-sandbox"

        def _answer(self) -> None:
            url = urlsplit(self.path)
            answer = app.handle(
                self.command, url.path, parse_qsl(url.query, keep_blank_values=True), dict(self.headers.items())
            )
            self.send_response(answer.status)
            for name, value in answer.headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(answer.body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(answer.body)

        do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _answer

        def log_message(self, format: str, *args: object) -> None:
            # The request line only: headers (and so the API key) are never logged.
            log.info("%s %s", self.address_string(), format % args)

    return Handler


class SandboxServer:
    """A threaded HTTP server for a SandboxApp; use as a context manager or call start()/stop()."""

    def __init__(self, app: SandboxApp, host: str = "127.0.0.1", port: int = 8765) -> None:
        self.app = app
        self.httpd = ThreadingHTTPServer((host, port), _handler_for(app))
        self.httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}"

    def serve_forever(self) -> None:
        self.httpd.serve_forever()

    def start(self) -> SandboxServer:
        self._thread = threading.Thread(target=self.httpd.serve_forever, name="pmw-sandbox", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> SandboxServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
