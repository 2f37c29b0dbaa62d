"""Reading the lake: a partition whole or a row group at a time, its rejects, its counts from the footers, and
which of its files cannot be read.

Every read goes through one open handle. polars 2.1 (given a path) and DuckDB 2.0 (``read_parquet``, so the raw
views) open a file more than once in one read, footer first and row groups later: a query that overlaps the
rewrite of a partition it reads can pair the old footer with the new file and fail with a corrupt-file error
(nothing is corrupt on disk; the same query run again succeeds). A handle pins one inode (of an object store, one
version of the object), so the reads here are immune. New partitions are not affected: they appear whole or not
at all.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from datetime import date
from typing import Any, BinaryIO

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.engine.lake.layout import (
    DATA_FILE,
    REJECTS_DIR,
    ROUND_PREFIX,
    LakeLayout,
    day_of,
    partition_value,
    table_of,
)
from pipeline.engine.lake.storage import Location

# LakeReads.is_readable's answers: (lake, key) -> (what changes with the file, readable).
_READABLE: dict[tuple[str, str], tuple[tuple[Any, ...], bool]] = {}


class LakeReads(LakeLayout):
    """What the lake holds, read back."""

    def read_partition(self, table: str, platform: str, day: date) -> pl.DataFrame | None:
        """The partition's rows with ``platform`` and ``date`` added back, or None if never written."""
        spec = table_of(table)
        if spec.rounds:
            frames = [frame for key in self._round_keys(table, platform, day)
                      if (frame := self._read_parquet(key)) is not None]
            frame = pl.concat(frames) if frames else None
        else:
            frame = self._read_parquet(self._data_key(table, platform, day))
        if frame is None:
            return None
        partition = [
            pl.lit(partition_value(spec, platform), pl.String()).alias(spec.partitioned_by),
            pl.lit(day_of(day), pl.Date()).alias("date"),
        ]
        return frame.with_columns(partition).select(spec.column_names)

    def read_partition_batches(self, table: str, platform: str, day: date,
                               columns: list[str] | None = None) -> Iterator[pl.DataFrame]:
        """The partition's rows a row group at a time, ``platform`` and ``date`` added back; none if never
        written. For partitions too large to read whole; like :meth:`read_partition`, through one handle.
        With ``columns`` (stored columns: not the partition's), those columns alone are read."""
        spec = table_of(table)
        partition = [
            pl.lit(partition_value(spec, platform), pl.String()).alias(spec.partitioned_by),
            pl.lit(day_of(day), pl.Date()).alias("date"),
        ]
        handle = self.store.open_read(self._data_key(table, platform, day))
        if handle is None:
            return
        with handle:
            parquet = pq.ParquetFile(handle)
            for group in range(parquet.num_row_groups):
                rows = pl.from_arrow(parquet.read_row_group(group, columns=columns))
                yield rows if columns else rows.with_columns(partition).select(spec.column_names)

    def read_rejects(self, table: str, platform: str, day: date) -> pl.DataFrame | None:
        """The partition's rejects as written, or None if its last write had none (for a table landed in rounds,
        those of every round of the day, or None if no round had any)."""
        if table_of(table).rounds:
            keys = self._round_keys(table, platform, day, f"{REJECTS_DIR}/")
            frames = [frame for key in keys if (frame := self._read_parquet(key)) is not None]
            return pl.concat(frames) if frames else None
        return self._read_parquet(self._rejects_key(table, platform, day))

    def row_count(self, table: str, platform: str, day: date) -> int | None:
        """The partition's rows, from its file's footer; None if it was never written or cannot be read."""
        if table_of(table).rounds:
            counts = [self._row_count(key) for key in self._round_keys(table, platform, day)]
            return None if not counts or None in counts else sum(c for c in counts if c is not None)
        return self._row_count(self._data_key(table, platform, day))

    def rejects_count(self, table: str, platform: str, day: date) -> int | None:
        """The partition's rejects, from their file's footer: 0 when its last write had none, None when the file
        is there but cannot be read. For a table landed in rounds, the rejects of every round of the day."""
        if table_of(table).rounds:
            counts = [self._row_count(key) for key in self._round_keys(table, platform, day, f"{REJECTS_DIR}/")]
            return None if None in counts else sum(c for c in counts if c is not None)
        key = self._rejects_key(table, platform, day)
        return self._row_count(key) if self.store.exists(key) else 0

    def unreadable(self, table: str) -> list[Location]:
        """The table's partition directories that cannot be listed and data files that cannot be opened
        (permissions, a failing disk), sorted. Readers that glob the lake (DuckDB's views, polars, `partitions`
        here) pass over them without a word, so whatever reads the whole table must ask first."""
        spec = table_of(table)

        def is_data(name: str) -> bool:
            return name == DATA_FILE or (spec.rounds and name.startswith(ROUND_PREFIX) and name.endswith(".parquet"))

        return self.store.unreadable(spec.name, is_data)

    def checksum(self, table: str, platform: str, day: date) -> str | None:
        """The SHA-256 of the partition's data file as it is now (`file_checksum`), None when there is none; what
        the freshness check holds against the checksum recorded when the pipeline landed it."""
        file = self.store.open_read(self._data_key(table, platform, day))
        if file is None:
            return None
        with file:
            return file_checksum(file)

    def is_readable(self, table: str, platform: str, day: date) -> bool:
        """Whether the partition's file is there and its footer reads: what automation makes sure of before it
        trusts a record of the partition. Remembered per file until the file changes (its inode, size or
        modification time; an object's tag), so that a sensor asking about every partition of its window on every
        tick reads each footer once."""
        key = self._data_key(table, platform, day)
        stamp = self.store.stamp(key)
        if stamp is None:
            return False
        location = (self.url, key)
        known = _READABLE.get(location)
        if known is None or known[0] != stamp:
            known = _READABLE[location] = (stamp, self._row_count(key) is not None)
        return known[1]

    def _row_count(self, key: str) -> int | None:
        try:
            return self.store.read_metadata(key).num_rows
        except (OSError, pa.ArrowException):  # missing, or unreadable: nothing there worth keeping from a replacement
            return None

    def _read_parquet(self, key: str) -> pl.DataFrame | None:
        """Read a file through one open handle, so that a concurrent replacement cannot tear the read.

        Given a path, polars 2.1 opens the file more than once (footer, then row groups): a rename in
        between pairs the old footer with the new data ("page header reported the wrong page size", or a
        panic). A handle pins one inode (of an object store, one version of the object) for the whole read.
        """
        handle = self.store.open_read(key)
        if handle is None:
            return None
        with handle:
            return pl.read_parquet(handle)


def file_checksum(file: BinaryIO) -> str:
    """A lake file's SHA-256 (hex): recorded when the file lands, held against the file by the freshness check."""
    return hashlib.file_digest(file, "sha256").hexdigest()
