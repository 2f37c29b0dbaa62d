"""What the unified API says about itself: one observation of `/platforms` and, when asked, `/health`.

Neither answer is a reason to fail: an endpoint that cannot be read (an error after the HTTP layer's retries) is
kept as its error, for the observation's rows to say so (pipeline.engine.platform_status). The platforms' own
APIs (PMW_SOURCE=direct) have no such endpoints: there is nothing to ask.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pipeline.engine.sources.http import ApiError, HttpLayer


@dataclass(frozen=True)
class Answered:
    """One endpoint's answer: its JSON body, or why there is none."""

    body: Any = None
    error: str | None = None


@dataclass(frozen=True)
class ServiceStatus:
    """One observation: when it was made (UTC, to the second: the name of its file in the lake) and the answers."""

    observed_at: datetime
    platforms: Answered
    health: Answered


def observe(http: HttpLayer, health: bool = True) -> ServiceStatus:
    """Ask `/platforms` (and `/health` unless told not to) once each."""
    observed_at = datetime.now(UTC).replace(microsecond=0)
    return ServiceStatus(observed_at, _ask(http, "/platforms"),
                         _ask(http, "/health") if health else Answered(error="not asked"))


def _ask(http: HttpLayer, path: str) -> Answered:
    try:
        return Answered(body=http.get_json(path, {}))
    except ApiError as error:  # its message is redacted by the HTTP layer
        return Answered(error=f"GET {path}: {error}")
