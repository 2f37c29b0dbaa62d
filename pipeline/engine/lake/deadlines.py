"""The deadline of each object-store operation (PMW_LAKE_DEADLINE_S), and a log line for each failed request.

An operation (an object read or written whole, a listing, a copy) runs as one coroutine of fsspec's event loop,
its requests and the client's retries in it; fsspec's `timeout` cancels that coroutine when the deadline passes,
so neither a body trickled a byte at a time nor a request never answered holds a run longer. The object store's
client tries a failed request again (within its own limits, inside the deadline); each failure is logged, so a
store that drops requests is seen, not just slow.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable
from typing import Any, TypeVar

from fsspec.exceptions import FSTimeoutError

log = logging.getLogger("pipeline.lake")
T = TypeVar("T")
_FAILED_REQUESTS = itertools.count(1)


class LakeDeadlinePassed(TimeoutError):
    """An object-store operation passed PMW_LAKE_DEADLINE_S; the message names the object."""


def bounded(deadline_s: float, doing: str, location: str, call: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """`call(*args, **kwargs)`, a method of an fsspec file system, given `deadline_s` to finish in."""
    try:
        return call(*args, timeout=deadline_s, **kwargs)
    except FSTimeoutError:
        raise LakeDeadlinePassed(f"{doing} {location}: not done within the deadline of {deadline_s:g} s "
                                 "(PMW_LAKE_DEADLINE_S)") from None


def log_failed_request(attempts: int, operation: Any = None, caught_exception: BaseException | None = None,
                       response: Any = None, **_: Any) -> None:
    """A botocore `needs-retry` handler: one log line per request that failed (no answer, or a 5xx/429 one);
    botocore then decides, as always, whether to try again."""
    status = response[0].status_code if response is not None else None
    if caught_exception is None and (status is None or (status < 500 and status != 429)):
        return
    cause = type(caught_exception).__name__ if caught_exception is not None else f"status {status}"
    name = getattr(operation, "name", "request")
    log.warning("object store: %s try %d failed (%s); failed requests in this process: %d",
                name, attempts, cause, next(_FAILED_REQUESTS))
