"""The sandbox served on loopback for tests that need a real HTTP server but do not test the server itself.

`SandboxServer`'s handler writes a response's headers and its body separately; on a keep-alive connection
Nagle's algorithm then holds the body until the client's delayed ACK of the headers, about 40 ms a request.
The pipeline's HTTP client keeps its connections alive, so a backfill of 50 requests spent two seconds
waiting on that alone. `LoopbackServer` is the same server with TCP_NODELAY on each accepted connection
(the standard library's `disable_nagle_algorithm`): the same answers, sent at once. The tests of the server
itself (tests/sandbox/test_server.py, the loopback test of test_security.py) use `SandboxServer` as it is.
"""

from __future__ import annotations

from pmw_sandbox.app import SandboxApp
from pmw_sandbox.server import SandboxServer


class LoopbackServer(SandboxServer):
    """A `SandboxServer` on 127.0.0.1 (an ephemeral port unless told) that sends each write at once."""

    def __init__(self, app: SandboxApp, host: str = "127.0.0.1", port: int = 0) -> None:
        super().__init__(app, host, port)
        handler = self.httpd.RequestHandlerClass
        self.httpd.RequestHandlerClass = type(handler.__name__, (handler,), {"disable_nagle_algorithm": True})
