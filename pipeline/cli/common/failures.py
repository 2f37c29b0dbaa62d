"""How a failure is said to a person: in one line. A command that cannot go on raises CommandError, which `pmw`
prints as `pmw <command>: <message>` on stderr before exiting with its status; a failed Dagster step is said by
its root cause."""

from __future__ import annotations

from typing import Protocol

USAGE = 2  # the exit status of bad arguments or configuration (argparse's own)
FAILED = 1  # the exit status of a command that ran and failed


class CommandError(Exception):
    """Why the command cannot go on, in one line, and the exit status that calls for."""

    def __init__(self, message: str, status: int = USAGE) -> None:
        super().__init__(message)
        self.status = status


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
