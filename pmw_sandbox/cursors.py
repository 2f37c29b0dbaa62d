"""Opaque, signed, short-lived pagination cursors bound to the filters they were issued for.

A cursor's text is deterministic (the same page of the same query always gets the same token, so that
responses are byte-identical across runs); its lifetime is kept on the server, from the moment it was last
issued.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass


class CursorError(Exception):
    """A cursor that cannot be used: malformed, for other filters, or expired."""


@dataclass
class CursorBook:
    secret: bytes
    ttl_s: float
    clock: Callable[[], float]

    def __post_init__(self) -> None:
        self._issued: dict[str, float] = {}

    @staticmethod
    def filters_digest(endpoint: str, filters: Mapping[str, str]) -> str:
        text = json.dumps([endpoint, sorted(filters.items())], separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def issue(self, endpoint: str, filters: Mapping[str, str], offset: int) -> str:
        payload = json.dumps({"o": offset, "f": self.filters_digest(endpoint, filters)}, separators=(",", ":"))
        body = base64.urlsafe_b64encode(payload.encode()).decode().rstrip("=")
        signature = hmac.new(self.secret, body.encode(), hashlib.sha256).hexdigest()[:20]
        token = f"{body}.{signature}"
        self._issued[token] = self.clock()
        return token

    def redeem(self, token: str, endpoint: str, filters: Mapping[str, str]) -> int:
        """The offset a cursor stands for, or CursorError saying why it cannot be used."""
        body, _, signature = token.partition(".")
        expected = hmac.new(self.secret, body.encode(), hashlib.sha256).hexdigest()[:20]
        if not hmac.compare_digest(signature, expected):
            raise CursorError("cursor is not a cursor this service issued")
        payload = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
        if payload["f"] != self.filters_digest(endpoint, filters):
            raise CursorError("cursor was issued for other filters; restart paging from the first page")
        issued_at = self._issued.get(token)
        if issued_at is None or self.clock() - issued_at > self.ttl_s:
            self._issued.pop(token, None)
            raise CursorError("cursor has expired; restart paging from the first page")
        return int(payload["o"])

    def expire(self, token: str) -> None:
        self._issued.pop(token, None)
