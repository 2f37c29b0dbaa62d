"""What a failed Dagster step says to a person: the cause, in one line."""

from __future__ import annotations

from typing import Protocol


class ErrorInfo(Protocol):
    """What Dagster records of a step's error (its SerializableErrorInfo): the message, class and cause."""

    message: str
    cls_name: str | None
    cause: ErrorInfo | None


def root_cause(error: ErrorInfo | None) -> str:
    """The innermost error's message: the user's error, not Dagster's wrapper around it."""
    if error is None:
        return "failed"
    while error.cause is not None:
        error = error.cause
    return error.message.strip().splitlines()[-1] if error.message.strip() else str(error.cls_name)
