"""What the unified API's routes share with the app: typed query access and the error answer.

Errors come in the unified API's envelope (`{"error": {"code", "message", "timestamp", "details"}}`), which the
app renders; the native routes have their own (native_http.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pipeline.engine.schema import LOWEST_DOCUMENTED_LIMIT, MAX_LIMIT, Platform
from pmw_sandbox.world import Record

DEFAULT_PAGE_SIZE = {"series": 25, "events": 25, "markets": 25, "trades": 100, "price_history": 5000,
                     "profile_trades": 50}


class UnifiedError(Exception):
    """An error answer of the unified API: its status, code, message, headers and details."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        headers: Mapping[str, str] | None = None,
        details: Record | None = None,
    ) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message
        self.headers = dict(headers or {})
        self.details = details


def bad(parameter: str, message: str) -> UnifiedError:
    return UnifiedError(400, "VALIDATION_ERROR", f"invalid parameter '{parameter}': {message}")


def not_found(message: str) -> UnifiedError:
    return UnifiedError(404, "NOT_FOUND", message)


class Query:
    """Typed access to query parameters, raising 400 errors that name the parameter."""

    def __init__(self, items: Sequence[tuple[str, str]], refuse_over_limit: bool = False) -> None:
        self.items = list(items)  # repeated keys kept, for the native routes
        self.values: dict[str, str] = dict(items)
        self.refuse_over_limit = refuse_over_limit

    def text(self, name: str) -> str | None:
        value = self.values.get(name)
        return value if value not in (None, "") else None

    def flag(self, name: str) -> bool:
        value = self.text(name)
        if value is None:
            return False
        if value not in ("true", "false"):
            raise bad(name, f"expected true or false, got {value!r}")
        return value == "true"

    def integer(self, name: str) -> int | None:
        value = self.text(name)
        if value is None:
            return None
        try:
            return int(value)
        except ValueError:
            raise bad(name, f"expected an integer, got {value!r}") from None

    def limit(self, resource: str) -> int:
        value = self.integer("limit")
        if value is None:
            return DEFAULT_PAGE_SIZE[resource]
        if value < 1:
            raise bad("limit", f"must be at least 1, got {value}")
        if self.refuse_over_limit:
            maximum = LOWEST_DOCUMENTED_LIMIT.get(resource, MAX_LIMIT[resource])
            if value > maximum:
                raise bad("limit", f"must be at most {maximum}, got {value}")
        return min(value, MAX_LIMIT[resource])

    def platform(self, allowed: Sequence[Platform], required: bool = False) -> Platform | None:
        value = self.text("platform")
        if value is None:
            if required:
                raise bad("platform", f"is required; expected one of {', '.join(allowed)}")
            return None
        if value not in allowed:
            raise bad("platform", f"expected one of {', '.join(allowed)} (one value per query), got {value!r}")
        return Platform(value)

    def filters(self) -> dict[str, str]:
        """What a cursor is bound to: every parameter except the cursor itself and the page size."""
        return {k: v for k, v in self.values.items() if k not in ("cursor", "limit")}
