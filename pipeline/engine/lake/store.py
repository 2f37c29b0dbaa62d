"""The Parquet lake: one file per (table, platform, day) partition, replaced atomically.

Layout (hive style)::

    <root>/<table>/platform=<platform>/date=<YYYY-MM-DD>/data.parquet
    <root>/_rejects/<table>/platform=<platform>/date=<YYYY-MM-DD>/rejects.parquet

The sports tables are partitioned by league instead (``league=<league>/date=...``, `Table.partitioned_by`): every
method's ``platform`` argument is then the league.

The partition columns ``platform`` and ``date`` live in the path only: the writer drops them and readers
add them back, so a file can never disagree with the directory it sits in.

A partition is rewritten as a whole. The new file is written to a hidden temporary file in the same
directory (``.data.parquet.<uuid>.tmp``: the leading dot and the ``.tmp`` suffix keep ``*.parquet`` globs
off it), fsynced, then renamed onto ``data.parquet``. A rename within a directory is atomic on POSIX, so an
open of ``data.parquet`` gets the old file or the new one, whole, and a process killed mid-write leaves the
previous file intact. Readers must use :meth:`Lake.glob` rather than scanning a directory: a directory scan
would also meet the temporary file of a write in progress.

A table whose partitions accumulate rounds (``Table.rounds``: orderbook snapshots taken through the day) keeps
each round in a file of its own, named by the round's time, beside the others in the day's directory::

    <root>/<table>/platform=<platform>/date=<YYYY-MM-DD>/round-<YYYYMMDDTHHMMSSZ>.parquet

A round is written like a partition (temporary file, fsync, rename), so a retried round replaces its own file
and nothing else: earlier rounds are never rewritten and a round never lands twice. A reader of the day lists
the files and reads each through one handle: it sees every round that had landed, each whole.

A partition too large to hold in memory (a busy day's trades) is written with
:meth:`Lake.write_partition_batches`: its rows arrive in batches that are written as row groups as they come,
so memory holds one batch and one row group, not the partition; the same temporary file, fsync and rename
make it just as atomic.

That guarantee is per open. polars 2.1 (given a path) and DuckDB 2.0 (``read_parquet``, so the raw views)
open a file more than once in one read, footer first and row groups later: a query that overlaps the
rewrite of a partition it reads can pair the old footer with the new file and fail with a corrupt-file
error (nothing is corrupt on disk; the same query run again succeeds). :meth:`Lake.read_partition` reads
through one handle and is immune. New partitions are not affected: they appear whole or not at all.

On an object store (PMW_LAKE_URL, `pipeline.engine.lake.storage`) the layout is the same under the bucket's
prefix, and so is the writing: a file is written whole to a local temporary (the same writer, page checksums and
row groups), then published in one upload, which an object store makes visible whole or not at all; a read takes
the object in one GET, so it is immune too. The temporaries and the partition locks are kept on the writer's host.

Identifiers (table, platform, day) arrive from schedules, CLIs and configs: they are validated against
``pipeline.engine.schema`` before any path is built from them.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any, BinaryIO, Protocol

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.engine.files import fsync_file
from pipeline.engine.lake import versions as partition_versions
from pipeline.engine.lake.storage import LakeStore, LocalStore, Location, open_store
from pipeline.engine.lake.versions import PartitionVersion
from pipeline.engine.schema import UTC_TIMESTAMP, Table, lake_tables

PARTITION_COLUMNS: tuple[str, ...] = ("platform", "date")
# Parquet writer options, chosen by measuring analysts' queries through the raw views against a native
# DuckDB table (benchmarks/queries.py; figures in benchmarks/README.md).
# 122_880 rows is DuckDB's own row-group size: large enough for good compression and cheap footers,
# small enough that min/max statistics let a reader skip most of a day's trades for one market (half or
# twice that size was slower on full scans or on the one-market query respectively).
# Every page of every file carries a CRC-32 of its bytes, and the file's key-value metadata says so: the scrub
# (pipeline.engine.lake.verify) reads every page back against it, and names a file written without them.
CHECKSUMS_KEY = b"pm-warehouse.page_checksums"
ROW_GROUP_SIZE = 122_880
# Every column is zstd-compressed. Leaving the float columns uncompressed
# made aggregate queries 10-20% faster for a 5% larger lake (benchmarks/README.md), not worth breaking it.
COMPRESSION = "zstd"
# Timestamps are stored delta-encoded, not dictionary-encoded: sorted by (key, time) their deltas pack into
# a few bits, while a dictionary of near-distinct instants is as large as the column (a 700 KB dictionary
# page per row group of a day's trades) and dominated the cost of reading it.
TIMESTAMP_ENCODING = "DELTA_BINARY_PACKED"
DATA_FILE = "data.parquet"
REJECTS_FILE = "rejects.parquet"
REJECTS_DIR = "_rejects"
ROUND_PREFIX = "round-"
REJECTS_SCHEMA = pl.Schema({"raw": pl.String(), "reason": pl.String(), "_fetched_at": UTC_TIMESTAMP})

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


class Lake:
    """The Parquet lake in a store (`pipeline.engine.lake.storage`): normally the folder ``$PMW_DATA_DIR/lake``, or
    the bucket PMW_LAKE_URL names.

    ``root`` is the lake's local folder: the lake itself when it is local; for a lake on an object store, where
    this host stages its writes, keeps its partition locks and spills. ``url`` is the lake's root as readers name it.
    """

    def __init__(self, root: Path | LakeStore, keep_versions: int = 0) -> None:
        """`keep_versions`: how many replaced versions of each partition to keep for `restore` (PMW_KEEP_VERSIONS)."""
        self.store = root if isinstance(root, LakeStore) else LocalStore(root)
        self.root = self.store.local
        self.url = self.store.url
        self.keep_versions = keep_versions

    @classmethod
    def of(cls, settings: LakeSettings, keep_versions: int = 0) -> Lake:
        """The lake the settings name (PMW_LAKE_URL, else ``$PMW_DATA_DIR/lake``)."""
        return cls(open_store(settings.lake_url, settings.data_dir), keep_versions)

    def partition_path(self, table: str, platform: str, day: date) -> Location:
        """The ``data.parquet`` path (or URL) of a partition (which may not exist yet)."""
        return self.store.location(self._data_key(table, platform, day))

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
        _check_schema(f"table {table}", rows.schema, _table(table).polars_schema)
        _check_rows_belong(table, rows, _partition_value(_table(table), platform), _day(day))
        if rejects is not None:
            _check_schema(f"rejects of table {table}", rejects.schema, REJECTS_SCHEMA)
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
        spec = _table(table)
        if spec.rounds:
            raise ValueError(f"table {table} is landed in rounds, not replaced whole: use write_round")
        platform = _partition_value(spec, platform)
        day = _day(day)
        data_key = self._data_key(table, platform, day)
        rejects_key = self._rejects_key(table, platform, day)
        data_path = self.store.location(data_key)
        self.store.location(rejects_key)
        with self.store.lock(_parent(data_key)):
            self.store.remove_leftovers(data_key)
            self.store.remove_leftovers(rejects_key)
            with _Staging(self.store) as staging:
                rows = staging.write(data_key, lambda file: _write_rows(file, spec, platform, day, batches))
                rejected = rejects()
                if rejected is not None:
                    _check_schema(f"rejects of table {table}", rejected.schema, REJECTS_SCHEMA)
                has_rejects = rejected is not None and rejected.height > 0
                if has_rejects:
                    staging.write(
                        rejects_key, lambda file: _write_frames(file, [rejected], _arrow_schema(REJECTS_SCHEMA))
                    )
                if approve is not None:
                    approve(self._row_count(data_key), rows, rejected)
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
        )

    def write_round(self, table: str, platform: str, day: date, round_at: datetime, rows: pl.DataFrame,
                    rejects: pl.DataFrame | None = None) -> PartitionWrite:
        """Land one round of a table whose partitions accumulate rounds: its own file in the day's partition,
        replacing only a previous write of the same round (a retry), never another round.

        Every row must carry the round's time in the table's time column: that is what names the file, so a
        row of another round would land under the wrong name.
        """
        spec = _table(table)
        if not spec.rounds:
            raise ValueError(f"table {table} is replaced whole, not landed in rounds: use write_partition")
        platform, day = _partition_value(spec, platform), _day(day)
        _check_schema(f"table {table}", rows.schema, spec.polars_schema)
        _check_rows_belong(table, rows, platform, day)
        assert spec.time_column is not None
        stray = rows.filter(pl.col(spec.time_column) != round_at).height
        if stray:
            raise ValueError(f"table {table}: {stray} rows are not of the round {round_at.isoformat()}")
        if rejects is not None:
            _check_schema(f"rejects of table {table}", rejects.schema, REJECTS_SCHEMA)
        name = round_file(round_at)
        directory = _partition_key(table, platform, day)
        data_key, rejects_key = f"{directory}/{name}", f"{REJECTS_DIR}/{directory}/{name}"
        data_path = self.store.location(data_key)
        self.store.location(rejects_key)
        has_rejects = rejects is not None and rejects.height > 0
        with self.store.lock(directory):
            self.store.remove_leftovers(data_key)
            self.store.remove_leftovers(rejects_key)
            with _Staging(self.store) as staging:
                written = staging.write(data_key, lambda file: _write_rows(file, spec, platform, day, [rows]))
                if has_rejects:
                    assert rejects is not None
                    staging.write(rejects_key, lambda file: _write_frames(file, [rejects],
                                                                          _arrow_schema(REJECTS_SCHEMA)))
                bytes_written = staging.publish()
            if not has_rejects:
                self.store.remove(rejects_key)
        return PartitionWrite(table=table, platform=platform, day=day, rows=written,
                              rejects=rejects.height if has_rejects and rejects is not None else 0,
                              bytes_written=bytes_written, path=data_path)

    def round_files(self, table: str, platform: str, day: date) -> list[Location]:
        """The round files of a partition of a table that accumulates rounds, in round order."""
        return [self.store.location(key) for key in self._round_keys(table, platform, day)]

    def _round_keys(self, table: str, platform: str, day: date, base: str = "") -> list[str]:
        return self.store.glob(f"{base}{_partition_key(table, platform, day)}/{ROUND_PREFIX}*.parquet")

    def read_partition(self, table: str, platform: str, day: date) -> pl.DataFrame | None:
        """The partition's rows with ``platform`` and ``date`` added back, or None if never written."""
        spec = _table(table)
        if spec.rounds:
            frames = [frame for key in self._round_keys(table, platform, day)
                      if (frame := self._read_parquet(key)) is not None]
            frame = pl.concat(frames) if frames else None
        else:
            frame = self._read_parquet(self._data_key(table, platform, day))
        if frame is None:
            return None
        partition = [
            pl.lit(_partition_value(spec, platform), pl.String()).alias(spec.partitioned_by),
            pl.lit(_day(day), pl.Date()).alias("date"),
        ]
        return frame.with_columns(partition).select(spec.column_names)

    def read_partition_batches(self, table: str, platform: str, day: date,
                               columns: list[str] | None = None) -> Iterator[pl.DataFrame]:
        """The partition's rows a row group at a time, ``platform`` and ``date`` added back; none if never
        written. For partitions too large to read whole; like :meth:`read_partition`, through one handle.
        With ``columns`` (stored columns: not the partition's), those columns alone are read."""
        spec = _table(table)
        partition = [
            pl.lit(_partition_value(spec, platform), pl.String()).alias(spec.partitioned_by),
            pl.lit(_day(day), pl.Date()).alias("date"),
        ]
        handle = self.store.open_read(self._data_key(table, platform, day))
        if handle is None:
            return
        with handle:
            parquet = pq.ParquetFile(handle)
            for group in range(parquet.num_row_groups):
                rows = pl.from_arrow(parquet.read_row_group(group, columns=columns))
                yield rows if columns else rows.with_columns(partition).select(spec.column_names)

    def row_count(self, table: str, platform: str, day: date) -> int | None:
        """The partition's rows, from its file's footer; None if it was never written or cannot be read."""
        if _table(table).rounds:
            counts = [self._row_count(key) for key in self._round_keys(table, platform, day)]
            return None if not counts or None in counts else sum(c for c in counts if c is not None)
        return self._row_count(self._data_key(table, platform, day))

    def rejects_path(self, table: str, platform: str, day: date) -> Location:
        """The ``rejects.parquet`` path (or URL) of a partition (there only when its last write had rejects)."""
        return self.store.location(self._rejects_key(table, platform, day))

    def rejects_count(self, table: str, platform: str, day: date) -> int | None:
        """The partition's rejects, from their file's footer: 0 when its last write had none, None when the file
        is there but cannot be read. For a table landed in rounds, the rejects of every round of the day."""
        if _table(table).rounds:
            counts = [self._row_count(key) for key in self._round_keys(table, platform, day, f"{REJECTS_DIR}/")]
            return None if None in counts else sum(c for c in counts if c is not None)
        key = self._rejects_key(table, platform, day)
        return self._row_count(key) if self.store.exists(key) else 0

    def versions(self, table: str, platform: str, day: date) -> list[PartitionVersion]:
        """The kept versions of the partition that later writes replaced, newest first."""
        return partition_versions.kept(self.store, self._versions_key(table, platform, _day(day)))

    def restore(self, table: str, platform: str, day: date, stamp: str | None = None) -> PartitionVersion:
        """Put a kept version (the newest, or the one of `stamp`) back in place of the partition, rejects and all;
        the version it replaces is kept in turn, so a restore can be undone. Raises LookupError naming the
        versions there are when there is none to restore."""
        day = _day(day)
        self.partition_path(table, platform, day)
        with self.store.lock(_partition_key(table, platform, day)):
            return partition_versions.restore(self.store, self._files(table, platform, day),
                                              self._versions_key(table, platform, day), stamp, self.keep_versions)

    def _files(self, table: str, platform: str, day: date) -> dict[str, str]:
        """A partition's files by name: the keys of its data and its rejects."""
        return {DATA_FILE: self._data_key(table, platform, day), REJECTS_FILE: self._rejects_key(table, platform, day)}

    def _versions_key(self, table: str, platform: str, day: date) -> str:
        key = f"{partition_versions.VERSIONS_DIR}/{_partition_key(table, platform, day)}"
        self.store.location(key)
        return key

    def unreadable(self, table: str) -> list[Location]:
        """The table's partition directories that cannot be listed and data files that cannot be opened
        (permissions, a failing disk), sorted. Readers that glob the lake (DuckDB's views, polars, `partitions`
        here) pass over them without a word, so whatever reads the whole table must ask first."""
        spec = _table(table)

        def is_data(name: str) -> bool:
            return name == DATA_FILE or (spec.rounds and name.startswith(ROUND_PREFIX) and name.endswith(".parquet"))

        return self.store.unreadable(spec.name, is_data)

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

    def read_rejects(self, table: str, platform: str, day: date) -> pl.DataFrame | None:
        """The partition's rejects as written, or None if its last write had none (for a table landed in rounds,
        those of every round of the day, or None if no round had any)."""
        if _table(table).rounds:
            keys = self._round_keys(table, platform, day, f"{REJECTS_DIR}/")
            frames = [frame for key in keys if (frame := self._read_parquet(key)) is not None]
            return pl.concat(frames) if frames else None
        return self._read_parquet(self._rejects_key(table, platform, day))

    def partitions(self, table: str) -> list[tuple[str, date]]:
        """The (platform, day) partitions that have landed, sorted.

        Directories that are not valid partition names (an unknown platform, a non-ISO date) and
        partitions whose first write never completed are not partitions of this lake and are skipped.
        """
        spec = _table(table)
        found = set()
        pattern = f"{ROUND_PREFIX}*.parquet" if spec.rounds else DATA_FILE
        for key in self.store.glob(f"{spec.name}/{spec.partitioned_by}=*/date=*/{pattern}"):
            partition = _parse_partition(spec, key)
            if partition is not None:
                found.add(partition)
        return sorted(found)

    def glob(self, table: str) -> str:
        """The absolute glob (path or URL) of the table's files, for readers (DuckDB, polars with hive
        partitioning)."""
        return table_glob(self.url, table)

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

    def _data_key(self, table: str, platform: str, day: date) -> str:
        return f"{_partition_key(table, platform, day)}/{DATA_FILE}"

    def _rejects_key(self, table: str, platform: str, day: date) -> str:
        return f"{REJECTS_DIR}/{_partition_key(table, platform, day)}/{REJECTS_FILE}"

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


class LakeSettings(Protocol):
    """What names a lake: `Settings` and `AutomationSettings` alike."""

    @property
    def lake_url(self) -> str | None: ...

    @property
    def data_dir(self) -> Path: ...


def table_glob(root: str, table: str) -> str:
    """The glob of a table's files in the lake whose root (path or URL) is `root`."""
    spec = _table(table)
    return f"{root}/{spec.name}/{spec.partitioned_by}=*/date=*/*.parquet"


def _partition_key(table: str, platform: str, day: date) -> str:
    """``<table>/platform=<p>/date=<d>`` (``league=`` for a table partitioned by league), checked."""
    spec = _table(table)
    return f"{spec.name}/{spec.partitioned_by}={_partition_value(spec, platform)}/date={_day(day).isoformat()}"


def _parent(key: str) -> str:
    return key.rsplit("/", 1)[0]


def _table(table: object) -> Table:
    tables = lake_tables()
    if not isinstance(table, str) or table not in tables:
        raise ValueError(f"unknown table {table!r}: expected one of {sorted(tables)}")
    return tables[table]


def round_file(round_at: datetime) -> str:
    """The file name of a round: its UTC time to the second, which sorts as the rounds do."""
    if round_at.tzinfo is None:
        raise ValueError(f"a round's time must be timezone-aware, got {round_at!r}")
    return f"{ROUND_PREFIX}{round_at.astimezone(UTC).strftime('%Y%m%dT%H%M%SZ')}.parquet"


def _partition_value(spec: Table, value: object) -> str:
    """The partition's platform (or league, for a table partitioned by league) as a plain str (a member of the
    enum is accepted), checked against the table's partition values."""
    allowed = [str(v) for v in spec.partition_values]
    if not isinstance(value, str) or value not in allowed:
        raise ValueError(f"unknown {spec.partitioned_by} {value!r}: expected one of {allowed}")
    return allowed[allowed.index(value)]


def _day(day: object) -> date:
    # A datetime is a date too, but its isoformat() would put a time of day in the path.
    if not isinstance(day, date) or isinstance(day, datetime):
        raise ValueError(f"invalid day {day!r}: expected a datetime.date")
    return day


def _parse_partition(spec: Table, key: str) -> tuple[str, date] | None:
    """(platform, day) from a file's key ``<table>/platform=<p>/date=<d>/<file>`` (league for a table partitioned
    by league), or None when the names are not canonical."""
    *_, dimension, day_part, _file = key.split("/")
    platform = dimension.removeprefix(f"{spec.partitioned_by}=")
    text = day_part.removeprefix("date=")
    try:
        day = date.fromisoformat(text)
    except ValueError:
        return None
    if platform not in spec.partition_values or day.isoformat() != text:
        return None
    return platform, day


def _check_schema(what: str, got: pl.Schema, expected: pl.Schema) -> None:
    """Raise ValueError at the first difference: a file with the wrong schema must never land."""
    if got == expected:
        return
    missing = [name for name in expected if name not in got]
    unexpected = [name for name in got if name not in expected]
    if missing or unexpected:
        raise ValueError(f"{what}: missing columns {missing}, unexpected columns {unexpected}")
    for (name, want), (got_name, have) in zip(expected.items(), got.items(), strict=True):
        if name != got_name:
            raise ValueError(f"{what}: column {got_name!r} is out of order: expected {name!r} at its position")
        if want != have:
            raise ValueError(f"{what}: column {name!r} expected type {want}, got {have}")


def _check_rows_belong(table: str, rows: pl.DataFrame, platform: str, day: date) -> None:
    """The partition columns are dropped on write, so a row of another partition would be silently moved."""
    dimension = _table(table).partitioned_by
    outside = rows.filter(((pl.col(dimension) != platform) | (pl.col("date") != day)).fill_null(True)).height
    if outside:
        raise ValueError(
            f"table {table}: {outside} of {rows.height} rows are not in partition {dimension}={platform} date={day}"
        )


def _write_rows(file: BinaryIO, spec: Table, platform: str, day: date, batches: Iterable[pl.DataFrame]) -> int:
    """Write the batches as the file's rows, each sorted, checking that together they are; return the count."""
    ordered = _in_sort_order(spec, (_file_frame(spec, batch, platform, day) for batch in batches))
    return _write_frames(file, ordered, _arrow_schema(spec.polars_schema, drop=spec.partition_columns))


def _file_frame(spec: Table, rows: pl.DataFrame, platform: str, day: date) -> pl.DataFrame:
    """A batch as stored: checked, partition columns dropped, rows in the table's sort order."""
    _check_schema(f"table {spec.name}", rows.schema, spec.polars_schema)
    _check_rows_belong(spec.name, rows, platform, day)
    return rows.drop(spec.partition_columns).sort(spec.sort_key, nulls_last=True, maintain_order=True)


def stored_schema(table: str, rejects: bool = False) -> pa.Schema:
    """The Arrow schema of the table's data files (its columns but the partition ones), or of its rejects files."""
    if rejects:
        return _arrow_schema(REJECTS_SCHEMA)
    spec = _table(table)
    return _arrow_schema(spec.polars_schema, drop=spec.partition_columns)


def _arrow_schema(schema: pl.Schema, drop: tuple[str, ...] = ()) -> pa.Schema:
    """The Arrow schema polars converts ``schema`` to, without the ``drop`` columns: what a file declares."""
    return pl.DataFrame(schema=schema).drop(drop).to_arrow().schema


def _in_sort_order(spec: Table, frames: Iterable[pl.DataFrame]) -> Iterator[pl.DataFrame]:
    """The sorted frames, refusing one whose first row sorts before the previous frame's last row."""
    previous: tuple[Any, ...] | None = None
    for frame in frames:
        if frame.is_empty():
            continue
        first, last = sort_position(spec, frame, 0), sort_position(spec, frame, -1)
        if previous is not None and first < previous:
            raise ValueError(
                f"table {spec.name}: a batch starts at {_shown_key(spec, frame, 0)}, before the end of the "
                "previous batch: batches must follow each other in sort-key order"
            )
        previous = last
        yield frame


def sort_position(spec: Table, frame: pl.DataFrame, index: int) -> tuple[Any, ...]:
    """Row ``index``'s sort key as a tuple that compares as the rows sort (nulls last)."""
    return tuple((value is None, value) for value in frame.select(spec.sort_key).row(index))


def _shown_key(spec: Table, frame: pl.DataFrame, index: int) -> str:
    return ", ".join(
        f"{name}={value!r}" for name, value in zip(spec.sort_key, frame.select(spec.sort_key).row(index), strict=True)
    )


def _write_frames(file: BinaryIO, frames: Iterable[pl.DataFrame], schema: pa.Schema) -> int:
    """Write frames as one Parquet file in row groups of ROW_GROUP_SIZE rows; return the rows written.

    Rows are buffered only until a row group is full, whatever the sizes of the frames, so that small
    batches still make full row groups (good compression, cheap footers) and large ones stay bounded.
    """
    pending: list[pa.Table] = []
    pending_rows = rows = 0
    marked = schema.with_metadata({**(schema.metadata or {}), CHECKSUMS_KEY: b"crc32"})
    with pq.ParquetWriter(file, marked, write_statistics=True, write_page_checksum=True,
                          **writer_options(schema)) as writer:
        for frame in frames:
            pending.append(frame.to_arrow())
            pending_rows += frame.height
            rows += frame.height
            if pending_rows >= ROW_GROUP_SIZE:
                buffered = pa.concat_tables(pending)
                full = pending_rows - pending_rows % ROW_GROUP_SIZE
                writer.write_table(buffered.slice(0, full), row_group_size=ROW_GROUP_SIZE)
                pending, pending_rows = [buffered.slice(full)], pending_rows - full
        if pending_rows:
            writer.write_table(pa.concat_tables(pending), row_group_size=ROW_GROUP_SIZE)
    return rows


def writer_options(schema: pa.Schema) -> dict[str, Any]:
    """The per-column ParquetWriter options for a file of ``schema``: codec, dictionary and encoding.

    pyarrow takes per-column options keyed by each leaf column's path in the Parquet schema (a struct's
    fields, a list's elements), and a leaf missing from them gets pyarrow's default (no compression, no
    dictionary), so every leaf is listed.
    """
    leaves = [leaf for field in schema for leaf in _leaf_columns(field.name, field.type)]
    timestamps = [path for path, dtype in leaves if pa.types.is_timestamp(dtype)]
    return {
        "compression": dict.fromkeys((path for path, _ in leaves), COMPRESSION),
        "use_dictionary": [path for path, _ in leaves if path not in timestamps],
        "column_encoding": dict.fromkeys(timestamps, TIMESTAMP_ENCODING),
    }


def _leaf_columns(path: str, dtype: pa.DataType) -> Iterator[tuple[str, pa.DataType]]:
    """(path, type) of the Parquet leaf columns of an Arrow column, named as pyarrow names them."""
    if pa.types.is_struct(dtype):
        for child in dtype.fields:
            yield from _leaf_columns(f"{path}.{child.name}", child.type)
    elif pa.types.is_map(dtype):
        yield from _leaf_columns(f"{path}.key_value.key", dtype.key_type)
        yield from _leaf_columns(f"{path}.key_value.value", dtype.item_type)
    elif pa.types.is_list(dtype) or pa.types.is_large_list(dtype) or pa.types.is_fixed_size_list(dtype):
        yield from _leaf_columns(f"{path}.list.element", dtype.value_type)
    else:
        yield path, dtype


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

    def publish(self) -> int:
        """Publish every staged file onto its key; return the bytes they hold."""
        written = sum(temporary.stat().st_size for temporary, _ in self._staged)
        for temporary, key in self._staged:
            self.store.publish(temporary, key)
        return written


# Lake.is_readable's answers: (lake, key) -> (what changes with the file, readable).
_READABLE: dict[tuple[str, str], tuple[tuple[Any, ...], bool]] = {}
