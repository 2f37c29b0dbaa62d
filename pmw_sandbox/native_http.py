"""What the native (platform-shaped) sandbox endpoints share: query access and the platforms' error answers.

The platforms answer errors in their own shapes (Gamma and the Data API `{"error": text}`, Kalshi
`{"error": {"code", "message"}}`), not in the unified API's envelope, so a native error carries its body.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

Record = dict[str, Any]


class NativeError(Exception):
    """An error answer of a native endpoint: the status and the body the platform would send."""

    def __init__(self, status: int, body: Record) -> None:
        super().__init__(str(body))
        self.status, self.body = status, body


def polymarket_error(status: int, message: str) -> NativeError:
    return NativeError(status, {"error": message})


def kalshi_error(status: int, code: str, message: str) -> NativeError:
    return NativeError(status, {"error": {"code": code, "message": message}})


class Params:
    """The query of a native request, keeping repeated keys (Gamma's `id=1&id=2`)."""

    def __init__(self, items: Sequence[tuple[str, str]]) -> None:
        self.items = list(items)

    def text(self, name: str) -> str | None:
        values = self.all(name)
        return values[-1] if values else None

    def all(self, name: str) -> list[str]:
        """Every non-empty value of a repeatable parameter, comma lists split (`condition_ids=a,b`)."""
        return [part for key, value in self.items if key == name for part in value.split(",") if part]

    def integer(self, name: str, default: int | None, error: Callable[[str, str], Exception]) -> int | None:
        """The integer value of `name`, or `default`; `error(name, text)` is raised for a non-integer."""
        value = self.text(name)
        if value is None:
            return default
        try:
            return int(value)
        except ValueError:
            raise error(name, value) from None

    def flag(self, name: str) -> bool | None:
        value = self.text(name)
        return None if value is None else value.lower() == "true"


def encode_cursor(offset: int) -> str:
    """An opaque Kalshi-style cursor for a position in a list."""
    return base64.urlsafe_b64encode(f"o:{offset}".encode()).decode()


def decode_cursor(token: str) -> int:
    text = base64.urlsafe_b64decode(token.encode()).decode()
    if not text.startswith("o:"):
        raise ValueError(token)
    return int(text[2:])


def iso_seconds(unix_s: int) -> str:
    return datetime.fromtimestamp(unix_s, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(value: str) -> datetime:
    """An ISO-8601 date or time as Gamma's date filters take it (`2026-11-21` or `2026-11-21T00:00:00Z`)."""
    moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
