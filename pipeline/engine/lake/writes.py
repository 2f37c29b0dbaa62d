"""Writing the lake: a partition replaced whole, from one frame or from batches, and a round landed beside the
day's others.

A partition is rewritten as a whole. The new file is written to a hidden temporary file in the same directory
(``.data.parquet.<uuid>.tmp``: the leading dot and the ``.tmp`` suffix keep ``*.parquet`` globs off it), fsynced,
then renamed onto ``data.parquet``. A rename within a directory is atomic on POSIX, so an open of ``data.parquet``
gets the old file or the new one, whole, and a process killed mid-write leaves the previous file intact. Readers
must use `Lake.glob` rather than scanning a directory: a directory scan would also meet the temporary file of a
write in progress. A partition too large to hold in memory (a busy day's trades) is written with
`write_partition_batches`: its rows arrive in batches written as row groups as they come, so memory holds one
batch and one row group, not the partition; the same temporary file, fsync and rename make it just as atomic.

A table whose partitions accumulate rounds (``Table.rounds``: orderbook snapshots taken through the day) keeps each
round in a file of its own, named by the round's time: a round is written like a partition, so a retried round
replaces its own file and nothing else, and a reader of the day sees every round that had landed, each whole.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import BinaryIO

import polars as pl

from pipeline.engine.lake import versions as partition_versions
from pipeline.engine.lake.layout import (
    REJECTS_DIR,
    day_of,
    parent_key,
    partition_key,
    partition_value,
    round_file,
    table_of,
)
from pipeline.engine.lake.parquet_files import arrow_schema, check_rows_belong, check_schema, write_frames, write_rows
from pipeline.engine.lake.reads import LakeReads, file_checksum
from pipeline.engine.lake.storage import LakeStore, Location
from pipeline.engine.schema import REJECTS_SCHEMA

# A caller's last word before a write is published: called with the partition's rows before the write (None
# when it had none, or its file cannot be read), the rows written and the rejects; raising keeps the previous
# partition (pipeline.engine.lake.replacement).
Approve = Callable[[int | None, int, pl.DataFrame | None], None]


@dataclass(frozen=True)
class PartitionWrite:
    """What one write_partition call landed; ``bytes_written`` counts the data and rejects files."""

    table: str
    platform: str
    day: date
    rows: int
    rejects: int
    bytes_written: int
    path: Location  # the data file's path, or its URL on an object store
    checksum: str = ""  # the data file's SHA-256, as published (`file_checksum`)
    rows_before: int | None = None  # the rows the partition held before (None: none, or an unreadable file)


class LakeWrites(LakeReads):
    """Partitions and rounds landed, each whole or not at all."""

    def write_partition(
        self,
        table: str,
        platform: str,
        day: date,
        rows: pl.DataFrame,
        rejects: pl.DataFrame | None = None,
        approve: Approve | None = None,
    ) -> PartitionWrite:
        """Replace the partition with ``rows`` and its rejects with ``rejects``.

        ``rows`` must have exactly ``TABLES[table].polars_schema`` and belong to the partition. With no
        rejects, a rejects file left by a previous run of the partition is removed, so that re-running a
        partition leaves exactly the new state. Both files are staged before either is published, which
        keeps the window in which a crash could pair new data with old rejects to two renames (or uploads).
        """
        check_schema(f"table {table}", rows.schema, table_of(table).polars_schema)
        check_rows_belong(table, rows, partition_value(table_of(table), platform), day_of(day))
        if rejects is not None:
            check_schema(f"rejects of table {table}", rejects.schema, REJECTS_SCHEMA)
        return self.write_partition_batches(table, platform, day, [rows], lambda: rejects, approve)

    def write_partition_batches(
        self,
        table: str,
        platform: str,
        day: date,
        batches: Iterable[pl.DataFrame],
        rejects: Callable[[], pl.DataFrame | None] = lambda: None,
        approve: Approve | None = None,
    ) -> PartitionWrite:
        """Replace the partition with rows that arrive in batches, holding one batch in memory at a time.

        Each batch must have exactly the table's schema and belong to the partition. The file must come out
        sorted by the table's sort key while no more than a batch is ever at hand, so the writer sorts
        within each batch and refuses a batch that starts before the previous one ended: the caller cuts
        its stream where the sort key allows (trades: between markets). ``rejects`` is called once the
        batches are exhausted, because a stream's rejects are only known then. Nothing is visible until
        every batch is written; an error midway (a refused batch, a failing source) leaves the previous
        partition as it was, as with :meth:`write_partition`; so does ``approve`` raising, which is called
        once everything is staged, before anything is published.
        """
        spec = table_of(table)
        if spec.rounds:
            raise ValueError(f"table {table} is landed in rounds, not replaced whole: use write_round")
        platform = partition_value(spec, platform)
        day = day_of(day)
        data_key = self._data_key(table, platform, day)
        rejects_key = self._rejects_key(table, platform, day)
        data_path = self.store.location(data_key)
        self.store.location(rejects_key)
        with self.store.lock(parent_key(data_key)):
            self.store.remove_leftovers(data_key)
            self.store.remove_leftovers(rejects_key)
            with _Staging(self.store) as staging:
                rows = staging.write(data_key, lambda file: write_rows(file, spec, platform, day, batches))
                checksum = staging.checksum(data_key)
                rejected = rejects()
                if rejected is not None:
                    check_schema(f"rejects of table {table}", rejected.schema, REJECTS_SCHEMA)
                has_rejects = rejected is not None and rejected.height > 0
                if has_rejects:
                    staging.write(
                        rejects_key, lambda file: write_frames(file, [rejected], arrow_schema(REJECTS_SCHEMA))
                    )
                before = self._row_count(data_key)
                if approve is not None:
                    approve(before, rows, rejected)
                if self.keep_versions:
                    partition_versions.keep(self.store, self._files(table, platform, day),
                                            self._versions_key(table, platform, day), self.keep_versions)
                bytes_written = staging.publish()
            if not has_rejects:
                self.store.remove(rejects_key)
        return PartitionWrite(
            table=table,
            platform=platform,
            day=day,
            rows=rows,
            rejects=rejected.height if has_rejects else 0,
            bytes_written=bytes_written,
            path=data_path,
            checksum=checksum,
            rows_before=before,
        )

    def write_round(self, table: str, platform: str, day: date, round_at: datetime, rows: pl.DataFrame,
                    rejects: pl.DataFrame | None = None) -> PartitionWrite:
        """Land one round of a table whose partitions accumulate rounds: its own file in the day's partition,
        replacing only a previous write of the same round (a retry), never another round.

        Every row must carry the round's time in the table's time column: that is what names the file, so a
        row of another round would land under the wrong name.
        """
        spec = table_of(table)
        if not spec.rounds:
            raise ValueError(f"table {table} is replaced whole, not landed in rounds: use write_partition")
        platform, day = partition_value(spec, platform), day_of(day)
        check_schema(f"table {table}", rows.schema, spec.polars_schema)
        check_rows_belong(table, rows, platform, day)
        assert spec.time_column is not None
        stray = rows.filter(pl.col(spec.time_column) != round_at).height
        if stray:
            raise ValueError(f"table {table}: {stray} rows are not of the round {round_at.isoformat()}")
        if rejects is not None:
            check_schema(f"rejects of table {table}", rejects.schema, REJECTS_SCHEMA)
        name = round_file(round_at)
        directory = partition_key(table, platform, day)
        data_key, rejects_key = f"{directory}/{name}", f"{REJECTS_DIR}/{directory}/{name}"
        data_path = self.store.location(data_key)
        self.store.location(rejects_key)
        has_rejects = rejects is not None and rejects.height > 0
        with self.store.lock(directory):
            self.store.remove_leftovers(data_key)
            self.store.remove_leftovers(rejects_key)
            with _Staging(self.store) as staging:
                written = staging.write(data_key, lambda file: write_rows(file, spec, platform, day, [rows]))
                if has_rejects:
                    assert rejects is not None
                    staging.write(rejects_key, lambda file: write_frames(file, [rejects],
                                                                          arrow_schema(REJECTS_SCHEMA)))
                bytes_written = staging.publish()
            if not has_rejects:
                self.store.remove(rejects_key)
        return PartitionWrite(table=table, platform=platform, day=day, rows=written,
                              rejects=rejects.height if has_rejects and rejects is not None else 0,
                              bytes_written=bytes_written, path=data_path)


class _Staging:
    """Files written to hidden local temporaries, then published onto their keys together.

    Temporaries are fsynced before any is published, so a rename can never publish a file whose bytes are not
    on disk yet (and an upload reads them whole); they are removed on exit whatever happened, and an object stays
    untouched until it is published.
    """

    def __init__(self, store: LakeStore) -> None:
        self.store = store
        self._staged: list[tuple[Path, str]] = []

    def __enter__(self) -> _Staging:
        return self

    def __exit__(self, *exc: object) -> None:
        for temporary, _ in self._staged:
            temporary.unlink(missing_ok=True)

    def write(self, key: str, write: Callable[[BinaryIO], int]) -> int:
        """Stage ``key``'s new content, written by ``write``; return what ``write`` returned."""
        temporary = self.store.temporary(key)
        self._staged.append((temporary, key))
        with temporary.open("xb") as file:
            result = write(file)
            file.flush()
            os.fsync(file.fileno())
        return result

    def checksum(self, key: str) -> str:
        """The SHA-256 of `key`'s staged content: what will be published."""
        with next(temporary for temporary, staged in self._staged if staged == key).open("rb") as file:
            return file_checksum(file)

    def publish(self) -> int:
        """Publish every staged file onto its key; return the bytes they hold."""
        written = sum(temporary.stat().st_size for temporary, _ in self._staged)
        for temporary, key in self._staged:
            self.store.publish(temporary, key)
        return written
