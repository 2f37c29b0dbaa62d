"""A lock file held by another holder while a block runs (another open of the file: the system tells them apart, as
it would another process), for the tests of the deadlines on locks."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from filelock import FileLock


@contextmanager
def held_elsewhere(path: Path | str) -> Iterator[None]:
    """The lock file `path` held by a thread of its own until the block ends."""
    holder = FileLock(str(path), thread_local=False)
    taken, release = threading.Event(), threading.Event()

    def hold() -> None:
        with holder:
            taken.set()
            release.wait(10)

    thread = threading.Thread(target=hold)
    thread.start()
    try:
        assert taken.wait(5), f"{path} was not taken"
        yield
    finally:
        release.set()
        thread.join(10)
