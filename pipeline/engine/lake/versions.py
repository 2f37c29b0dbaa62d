"""The versions of a partition that later writes replaced, kept for `pmw restore`.

Before a write renames a partition's new files into place, the files it replaces are hard-linked into a
directory of their own under ``<lake>/_versions/<table>/platform=<p>/date=<d>/<stamp>/`` (a link costs no
copy, and the rename leaves the linked bytes alone). The newest ``keep`` versions of each partition stay; older
ones are deleted. A crash between the link and the rename leaves a version equal to the partition, which is
harmless. ``_versions`` is beside the tables, so no glob of a table's files reaches it.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.engine.files import replace_durably, temporary_beside

VERSIONS_DIR = "_versions"


@dataclass(frozen=True)
class PartitionVersion:
    """A kept version: when it was replaced (UTC, `YYYYMMDDTHHMMSS.ffffffZ`) and where its files are."""

    stamp: str
    directory: Path

    @property
    def rows(self) -> int | None:
        """The version's rows, from its data file's footer; None if it does not read."""
        try:
            return pq.read_metadata(self.directory / "data.parquet").num_rows
        except (OSError, pa.ArrowException):
            return None


def keep(current: Mapping[str, Path], directory: Path, newest: int) -> PartitionVersion | None:
    """Link the `current` files that exist (file name -> path) into a new version in `directory`, then keep only
    the `newest` versions there; the new version, or None when there was nothing to keep."""
    present = {name: path for name, path in current.items() if path.exists()}
    if not present:
        return None
    directory.mkdir(parents=True, exist_ok=True)
    for leftover in directory.glob(".*.tmp"):  # of a writer killed while linking: the caller holds the lock
        shutil.rmtree(leftover, ignore_errors=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S.%fZ")
    linking = directory / f".{stamp}.tmp"
    linking.mkdir()
    for name, path in present.items():
        os.link(path, linking / name)
    version = directory / stamp
    linking.rename(version)  # a version appears whole, data and rejects together, or not at all
    for old in kept(directory)[newest:]:
        shutil.rmtree(old.directory, ignore_errors=True)
    return PartitionVersion(stamp, version)


def kept(directory: Path) -> list[PartitionVersion]:
    """The versions in `directory`, newest first."""
    if not directory.is_dir():
        return []
    return [PartitionVersion(path.name, path) for path in sorted(directory.iterdir(), reverse=True)
            if path.is_dir() and not path.name.startswith(".")]


def restore(current: Mapping[str, Path], directory: Path, stamp: str | None, newest: int) -> PartitionVersion:
    """Put the version of `stamp` (default: the newest) in place of the `current` files, each by an atomic
    rename; a current file the version lacks (rejects) is removed. What it replaces is kept first, as a version
    of its own. Raises LookupError when there is no such version."""
    versions = kept(directory)
    chosen = next((v for v in versions if stamp is None or v.stamp == stamp), None)
    if chosen is None:
        there = ", ".join(v.stamp for v in versions) or "none"
        raise LookupError(f"no kept version {stamp or ''} in {directory} (kept: {there})".replace("  ", " "))
    keep(current, directory, max(newest, len(versions) + 1))  # nothing is pruned by a restore
    for name, target in current.items():
        source = chosen.directory / name
        if source.exists():
            temporary = temporary_beside(target)
            os.link(source, temporary)
            replace_durably(temporary, target)
        else:
            target.unlink(missing_ok=True)
    return chosen
