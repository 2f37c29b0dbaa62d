"""The sandbox mounted in-process as an httpx transport: code under test needs no server."""

from __future__ import annotations

import httpx

from pmw_sandbox.app import SandboxApp, SandboxConfig

SANDBOX_BASE_URL = "http://sandbox.invalid"


class SandboxTransport(httpx.BaseTransport):
    """Answers every request from a `SandboxApp`, as the HTTP server would."""

    def __init__(self, app: SandboxApp | None = None) -> None:
        self.app = app or SandboxApp(SandboxConfig())

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        answer = self.app.handle(
            request.method,
            request.url.path,
            list(request.url.params.multi_items()),
            dict(request.headers),
        )
        return httpx.Response(answer.status, headers=answer.headers, content=answer.body, request=request)


def sandbox_client(app: SandboxApp | None = None, api_key: str | None = None, **kwargs: object) -> httpx.Client:
    """An httpx client wired to an in-process sandbox (with a sandbox key unless told otherwise)."""
    transport = SandboxTransport(app)
    key = api_key if api_key is not None else transport.app.config.api_keys[0]
    return httpx.Client(transport=transport, base_url=SANDBOX_BASE_URL, headers={"X-API-Key": key}, **kwargs)  # type: ignore[arg-type]
