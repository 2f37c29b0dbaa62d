"""The unified API's request budget: a sliding window of accepted requests per key, and its 429 answer."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

from pmw_sandbox.unified_http import UnifiedError


class RateLimiter:
    """A sliding window (a minute unless configured otherwise) of accepted requests per key."""

    def __init__(self, per_window: int, clock: Callable[[], float], window_s: float = 60.0) -> None:
        if window_s <= 0:
            raise ValueError(f"a rate window must be longer than 0 s, got {window_s}")
        self.per_window, self.window_s, self.clock = per_window, window_s, clock
        self.windows: dict[str, deque[float]] = {}

    def admit(self, key: str) -> float | None:
        """None if the request may go on, else the seconds until it could."""
        now = self.clock()
        window = self.windows.setdefault(key, deque())
        while window and now - window[0] >= self.window_s:
            window.popleft()
        if len(window) >= self.per_window:
            return self.window_s - (now - window[0])
        window.append(now)
        return None


def rate_limited(wait_s: float, per_window: int | None, window_s: float = 60.0) -> UnifiedError:
    """A 429 whose Retry-After (whole seconds, at least 1) covers `wait_s`, the time until the window admits."""
    retry_after = max(1, int(wait_s + 0.999))
    per = "minute" if window_s == 60.0 else f"{window_s:g} s"
    budget = f" of {per_window} requests per {per}" if per_window else ""
    return UnifiedError(
        429,
        "RATE_LIMITED",
        f"rate limit{budget} exceeded; retry after {retry_after} s",
        headers={"Retry-After": str(retry_after)},
        details={"retry_after": retry_after},
    )
