"""Files replaced atomically: written beside their target under a hidden temporary name, flushed to disk, then
renamed over it, so that a reader sees the old file or the new one and a crash leaves the old one in place."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from uuid import uuid4


def temporary_beside(target: Path) -> Path:
    """A unique hidden name next to ``target`` (same directory, so that the rename is atomic)."""
    return target.with_name(f".{target.name}.{uuid4().hex}.tmp")


def leftover_temporaries(target: Path) -> Iterator[Path]:
    """Temporary files that writers killed before their rename left next to ``target``."""
    if target.parent.is_dir():
        yield from target.parent.glob(f".{target.name}.*.tmp")


def fsync_file(path: Path) -> None:
    with path.open("rb") as file:
        os.fsync(file.fileno())


def fsync_directory(directory: Path) -> None:
    """Persist a rename or an unlink: they are entries of the directory, not of the file."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def replace_durably(temporary: Path, target: Path) -> None:
    """Rename a written, flushed ``temporary`` over ``target`` and persist the rename."""
    os.replace(temporary, target)
    fsync_directory(target.parent)


@contextmanager
def replaced_atomically(target: Path) -> Iterator[Path]:
    """The temporary path to write ``target``'s new content to; on a clean exit it is flushed and renamed over
    ``target``, on an error removed (``target`` untouched)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = temporary_beside(target)
    try:
        yield temporary
        fsync_file(temporary)
        replace_durably(temporary, target)
    finally:
        temporary.unlink(missing_ok=True)


def some_paths(paths: Sequence[Path | str], shown: int = 5) -> str:
    """The first `shown` paths, comma separated, and how many more there are: for messages that name files."""
    more = f" and {len(paths) - shown} more" if len(paths) > shown else ""
    return ", ".join(str(path) for path in paths[:shown]) + more
