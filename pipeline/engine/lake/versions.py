"""The versions of a partition that later writes replaced, kept for `pmw restore`.

Before a write publishes a partition's new files, the files it replaces are copied into a folder of their own
under ``<lake>/_versions/<table>/platform=<p>/date=<d>/<stamp>/`` (`LakeStore.freeze`: hard links on local disk,
which cost no copy and which the rename leaves alone; server-side copies on an object store). The newest ``keep``
versions of each partition stay; older ones are deleted. A crash between the copy and the publication leaves a
version equal to the partition, which is harmless. ``_versions`` is beside the tables, so no glob of a table's files
reaches it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

import pyarrow as pa

from pipeline.engine.lake.storage import LakeStore, Location

VERSIONS_DIR = "_versions"
DATA_FILE = "data.parquet"


@dataclass(frozen=True)
class PartitionVersion:
    """A kept version: when it was replaced (UTC, `YYYYMMDDTHHMMSS.ffffffZ`) and where its files are."""

    stamp: str
    store: LakeStore
    key: str

    @property
    def directory(self) -> Location:
        return self.store.location(self.key)

    @property
    def rows(self) -> int | None:
        """The version's rows, from its data file's footer; None if it does not read."""
        try:
            return self.store.read_metadata(f"{self.key}/{DATA_FILE}").num_rows
        except (OSError, pa.ArrowException):
            return None


def keep(store: LakeStore, current: Mapping[str, str], directory: str, newest: int) -> PartitionVersion | None:
    """Copy the `current` objects that exist (file name -> key) into a new version in `directory`, then keep only
    the `newest` versions there; the new version, or None when there was nothing to keep."""
    present = {name: key for name, key in current.items() if store.exists(key)}
    if not present:
        return None
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S.%fZ")
    version = f"{directory}/{stamp}"
    store.freeze(present, version)  # a version appears whole, data and rejects together, or not at all
    prune(store, directory, newest)
    return PartitionVersion(stamp, store, version)


def prune(store: LakeStore, directory: str, newest: int) -> None:
    """Delete the versions in `directory` but the `newest`."""
    for old in kept(store, directory)[newest:]:
        store.remove_tree(old.key)


def kept(store: LakeStore, directory: str) -> list[PartitionVersion]:
    """The versions in `directory`, newest first."""
    return [PartitionVersion(name, store, f"{directory}/{name}")
            for name in reversed(store.subdirectories(directory))]


def restore(store: LakeStore, current: Mapping[str, str], directory: str, stamp: str | None,
            newest: int) -> PartitionVersion:
    """Put the version of `stamp` (default: the newest) in place of the `current` files, each replaced atomically;
    a current file the version lacks (rejects) is removed. What it replaces is kept first, as a version of its own;
    then the versions are pruned to the `newest` (at least that one, so the restore can be undone), once the chosen
    one, which may be among those pruned, is in place. Raises LookupError when there is no such version."""
    versions = kept(store, directory)
    chosen = next((v for v in versions if stamp is None or v.stamp == stamp), None)
    if chosen is None:
        there = ", ".join(v.stamp for v in versions) or "none"
        where = store.location(directory)
        raise LookupError(f"no kept version {stamp or ''} in {where} (kept: {there})".replace("  ", " "))
    keep(store, current, directory, len(versions) + 1)  # nothing pruned before the chosen version is in place
    for name, target in current.items():
        source = f"{chosen.key}/{name}"
        if store.exists(source):
            store.copy(source, target)
        else:
            store.remove(target)
    prune(store, directory, max(newest, 1))
    return chosen
