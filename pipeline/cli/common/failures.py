"""How a failure is said to a person: in one line. A command that cannot go on raises CommandError, which `pmw`
prints as `pmw <command>: <message>` on stderr before exiting with its status; a failed Dagster step is said by
its root cause; a failure of the machine's or the bucket's (a full disk, a quota, no credentials) by `outside`."""

from __future__ import annotations

from typing import Protocol

# The object stores' client errors that are not OSError (s3fs turns the server's answers into OSError, but not a
# client that cannot sign a request): botocore's, when the s3 extra is installed.
try:
    from botocore.exceptions import BotoCoreError
except ImportError:  # no object-store extra: no such error can happen
    CLIENT_ERRORS: tuple[type[Exception], ...] = ()
else:
    CLIENT_ERRORS = (BotoCoreError,)
OUTSIDE_ERRORS = (OSError, *CLIENT_ERRORS)  # the failures `outside` says

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


def outside(error: Exception) -> str:
    """A failure of what the pipeline stands on, in one line: the disk's (with the path), the bucket's (as its
    server said it), or the object store's client (no credentials, no endpoint)."""
    if isinstance(error, OSError):
        if error.strerror and error.filename:
            return f"{error.strerror}: {error.filename}"
        return " ".join(str(error).split())
    said = " ".join(str(error).split())
    return f"the lake's object store (PMW_LAKE_URL): {said} (its client reads the AWS_* variables)"
