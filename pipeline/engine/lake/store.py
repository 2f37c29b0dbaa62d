"""The Parquet lake: one file per (table, platform, day) partition, replaced atomically (`Lake`).

`Lake` is its layout (layout.py: where each file is), its reads (reads.py), its writes (writes.py: a partition
replaced whole, a round landed beside the others) and, here, the replaced versions it keeps for `pmw restore` and
the replacement of a file the warehouse builds. Its files are written as parquet_files.py says.

On an object store (PMW_LAKE_URL, `pipeline.engine.lake.storage`) the layout is the same under the bucket's
prefix, and so is the writing: a file is written whole to a local temporary (the same writer, page checksums and
row groups), then published in one upload, which an object store makes visible whole or not at all; a read takes
the object in one GET, so it is immune to a concurrent replacement too. The temporaries and the partition locks
are kept on the writer's host.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date
from pathlib import Path

from pipeline.engine.files import fsync_file
from pipeline.engine.lake import versions as partition_versions
from pipeline.engine.lake.layout import day_of, partition_key
from pipeline.engine.lake.versions import PartitionVersion
from pipeline.engine.lake.writes import LakeWrites


class Lake(LakeWrites):
    """The Parquet lake in a store (`pipeline.engine.lake.storage`): normally the folder ``$PMW_DATA_DIR/lake``, or
    the bucket PMW_LAKE_URL names.

    ``root`` is the lake's local folder: the lake itself when it is local; for a lake on an object store, where
    this host stages its writes, keeps its partition locks and spills. ``url`` is the lake's root as readers name it.
    """

    def versions(self, table: str, platform: str, day: date) -> list[PartitionVersion]:
        """The kept versions of the partition that later writes replaced, newest first."""
        return partition_versions.kept(self.store, self._versions_key(table, platform, day_of(day)))

    def restore(self, table: str, platform: str, day: date, stamp: str | None = None) -> PartitionVersion:
        """Put a kept version (the newest, or the one of `stamp`) back in place of the partition, rejects and all;
        the version it replaces is kept in turn, so a restore can be undone. Raises LookupError naming the
        versions there are when there is none to restore."""
        day = day_of(day)
        self.partition_path(table, platform, day)
        with self.store.lock(partition_key(table, platform, day)):
            return partition_versions.restore(self.store, self._files(table, platform, day),
                                              self._versions_key(table, platform, day), stamp, self.keep_versions)

    @contextmanager
    def replacing(self, key: str) -> Iterator[Path]:
        """A local temporary path to write the lake file `key`'s new content to (a built model's table); on a clean
        exit it is flushed and published whole over `key`, on an error removed (`key` untouched)."""
        temporary = self.store.temporary(key)
        try:
            yield temporary
            fsync_file(temporary)
            self.store.publish(temporary, key)
        finally:
            temporary.unlink(missing_ok=True)
