"""What the unified API says about itself: one observation of `/platforms` and `/health`.

Neither answer is a reason to fail: an endpoint that cannot be read (an error after the HTTP layer's retries) is
kept as its error, for the observation's rows to say so (pipeline.engine.normalize.platform_status). The platforms' own
APIs (PMW_SOURCE=direct) have no such endpoints: there is nothing to ask.
"""

from __future__ import annotations

from datetime import UTC, datetime

from pipeline.engine.raw_pages import Answered, ServiceStatus
from pipeline.engine.sources.http import ApiError, HttpLayer


def observe(http: HttpLayer) -> ServiceStatus:
    """Ask `/platforms` and `/health` once each."""
    observed_at = datetime.now(UTC).replace(microsecond=0)
    return ServiceStatus(observed_at, _ask(http, "/platforms"), _ask(http, "/health"))


def _ask(http: HttpLayer, path: str) -> Answered:
    try:
        return Answered(body=http.get_json(path, {}))
    except ApiError as error:  # its message is redacted by the HTTP layer
        return Answered(error=f"GET {path}: {error}")
