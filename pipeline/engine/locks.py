"""Locks between processes (a file each), every one awaited at most a deadline: a holder that hangs, or is stopped,
fails the waiter with one line naming the lock, what it guards and the setting that bounds the wait, instead of
holding it, and the API's pool with it, for ever."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from filelock import FileLock, Timeout

LOCK_SETTING = "PMW_LOCK_TIMEOUT_S"


class LockWaitPassed(TimeoutError):
    """Another process held a lock for longer than the waiter's deadline."""


@contextmanager
def held(path: Path | str, guarding: str, timeout_s: float, setting: str | None = LOCK_SETTING) -> Iterator[None]:
    """The lock file `path` held while the block runs, awaited at most `timeout_s` seconds (bounded by `setting`,
    or by a constant when None); `guarding` says what it guards, for the one line of a wait that passes it."""
    lock = FileLock(str(path), timeout=timeout_s)
    try:
        lock.acquire()
    except Timeout:
        bound = f"{timeout_s:g} s ({setting})" if setting else f"{timeout_s:g} s"
        raise LockWaitPassed(f"waited {bound} for the lock of {guarding}, held by another process: {path}") from None
    try:
        yield
    finally:
        lock.release()
