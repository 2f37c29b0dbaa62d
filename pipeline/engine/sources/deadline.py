"""One deadline for a whole HTTP request: connecting, sending, the status line, the headers and the body together.

httpx's timeouts bound each wait on the socket alone, so a server sending a byte now and then holds a request
for ever. Here every socket wait of a request (TCP connect, TLS handshake, each read and write) waits at most
the time left before the request's deadline; past it the wait ends with `DeadlinePassed`, naming what was being
done. `RequestClock` holds the deadline of the request under way; `deadline_transport` is the httpx transport
whose sockets obey it (httpcore's network backend is the hook).
"""

from __future__ import annotations

import math
import ssl
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import httpcore
import httpx

T = TypeVar("T")


ANSWER = "the answer"  # what a read awaits: the caller knows which part of it


class DeadlinePassed(Exception):
    """The request's deadline passed; `awaited` is what its socket was waiting for then."""

    def __init__(self, awaited: str) -> None:
        super().__init__(f"deadline passed waiting for {awaited}")
        self.awaited = awaited


class RequestClock:
    """The deadline of the request under way (none between requests); its owner makes one request at a time."""

    def __init__(self) -> None:
        self._at = math.inf

    @contextmanager
    def running(self, seconds: float) -> Iterator[None]:
        """A request's time: its socket waits end `seconds` from now at the latest."""
        self._at = time.monotonic() + seconds
        try:
            yield
        finally:
            self._at = math.inf

    def passed(self) -> bool:
        return time.monotonic() >= self._at

    def bounded(self, awaited: str, wait: Callable[[float | None], T], timeout: float | None) -> T:
        """`wait(t)` with `t` the lesser of `timeout` and the time left; DeadlinePassed when that runs out."""
        left = self._at - time.monotonic()
        if left <= 0:
            raise DeadlinePassed(awaited)
        if timeout is not None and timeout < left:
            return wait(timeout)  # the timeout's own error, if it trips first
        try:
            return wait(left)
        except httpcore.TimeoutException:
            raise DeadlinePassed(awaited) from None


class _DeadlineStream(httpcore.NetworkStream):
    def __init__(self, stream: httpcore.NetworkStream, clock: RequestClock) -> None:
        self._stream, self._clock = stream, clock

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._clock.bounded(ANSWER, lambda t: self._stream.read(max_bytes, t), timeout)

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._clock.bounded("the request to be sent", lambda t: self._stream.write(buffer, t), timeout)

    def close(self) -> None:
        self._stream.close()

    def start_tls(self, ssl_context: ssl.SSLContext, server_hostname: str | None = None,
                  timeout: float | None = None) -> httpcore.NetworkStream:
        secured = self._clock.bounded(
            "the TLS handshake", lambda t: self._stream.start_tls(ssl_context, server_hostname, t), timeout)
        return _DeadlineStream(secured, self._clock)

    def get_extra_info(self, info: str) -> Any:
        return self._stream.get_extra_info(info)


class _DeadlineBackend(httpcore.NetworkBackend):
    def __init__(self, clock: RequestClock) -> None:
        self._backend, self._clock = httpcore.SyncBackend(), clock

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: Iterable[Any] | None = None) -> httpcore.NetworkStream:
        def connect(t: float | None) -> httpcore.NetworkStream:
            return self._backend.connect_tcp(host, port, t, local_address, socket_options)

        stream = self._clock.bounded("the connection", connect, timeout)
        return _DeadlineStream(stream, self._clock)

    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options: Iterable[Any] | None = None) -> httpcore.NetworkStream:
        stream = self._clock.bounded(
            "the connection", lambda t: self._backend.connect_unix_socket(path, t, socket_options), timeout)
        return _DeadlineStream(stream, self._clock)

    def sleep(self, seconds: float) -> None:
        self._backend.sleep(seconds)


def deadline_transport(clock: RequestClock, tls: ssl.SSLContext, base_url: str) -> httpx.HTTPTransport:
    """httpx's own transport to `base_url` (keep-alive pool, the environment's proxy for it), its sockets bounded by
    `clock`."""
    transport = httpx.HTTPTransport(verify=tls, proxy=_environment_proxy(base_url))
    # httpx 0.28 has no overall timeout and takes no network backend (encode/httpx#1450); the httpcore pool that
    # HTTPTransport sends every request through opens each connection with its `_network_backend`: the one place
    # to bound every socket wait of a request, whatever the pool (direct or through a proxy).
    transport._pool._network_backend = _DeadlineBackend(clock)
    return transport


def _environment_proxy(url: str) -> str | None:
    """The proxy that HTTPS_PROXY, HTTP_PROXY or ALL_PROXY name for `url`, unless NO_PROXY exempts its host (httpx
    reads them itself only for a client without a transport of its own)."""
    parts = urllib.parse.urlsplit(url)
    proxies = urllib.request.getproxies()
    proxy = proxies.get(parts.scheme) or proxies.get("all")
    return None if not proxy or urllib.request.proxy_bypass(parts.hostname or "") else proxy
