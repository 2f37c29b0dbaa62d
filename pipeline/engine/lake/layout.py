"""Where the lake keeps what: a key per partition file, checked names, and the lake's store.

Layout (hive style)::

    <root>/<table>/platform=<platform>/date=<YYYY-MM-DD>/data.parquet
    <root>/_rejects/<table>/platform=<platform>/date=<YYYY-MM-DD>/rejects.parquet
    <root>/<table>/platform=<platform>/date=<YYYY-MM-DD>/round-<YYYYMMDDTHHMMSSZ>.parquet   (a table landed in rounds)

The sports tables are partitioned by league instead (``league=<league>/date=...``, `Table.partitioned_by`): every
method's ``platform`` argument is then the league. The partition columns live in the path only: the writer drops
them and readers add them back, so a file can never disagree with the directory it sits in. Identifiers (table,
platform, day) arrive from schedules, CLIs and configs: they are validated against ``pipeline.engine.schema``
before any path is built from them.
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path
from typing import Protocol, Self

from pipeline.engine.lake import versions as partition_versions
from pipeline.engine.lake.storage import LakeStore, LocalStore, Location, open_store
from pipeline.engine.schema import Table, lake_tables

PARTITION_COLUMNS: tuple[str, ...] = ("platform", "date")
DATA_FILE = "data.parquet"
REJECTS_FILE = "rejects.parquet"
REJECTS_DIR = "_rejects"
ROUND_PREFIX = "round-"


class LakeLayout:
    """The lake's store and the keys of its partitions' files."""

    def __init__(self, root: Path | LakeStore, keep_versions: int = 0) -> None:
        """`keep_versions`: how many replaced versions of each partition to keep for `restore` (PMW_KEEP_VERSIONS)."""
        self.store = root if isinstance(root, LakeStore) else LocalStore(root)
        self.root = self.store.local
        self.url = self.store.url
        self.keep_versions = keep_versions

    @classmethod
    def of(cls, settings: LakeSettings, keep_versions: int = 0) -> Self:
        """The lake the settings name (PMW_LAKE_URL, else ``$PMW_DATA_DIR/lake``)."""
        return cls(open_store(settings.lake_url, settings.data_dir, settings.lake_deadline_s), keep_versions)

    def partition_path(self, table: str, platform: str, day: date) -> Location:
        """The ``data.parquet`` path (or URL) of a partition (which may not exist yet)."""
        return self.store.location(self._data_key(table, platform, day))

    def rejects_path(self, table: str, platform: str, day: date) -> Location:
        """The ``rejects.parquet`` path (or URL) of a partition (there only when its last write had rejects)."""
        return self.store.location(self._rejects_key(table, platform, day))

    def round_files(self, table: str, platform: str, day: date) -> list[Location]:
        """The round files of a partition of a table that accumulates rounds, in round order."""
        return [self.store.location(key) for key in self._round_keys(table, platform, day)]

    def _round_keys(self, table: str, platform: str, day: date, base: str = "") -> list[str]:
        return self.store.glob(f"{base}{partition_key(table, platform, day)}/{ROUND_PREFIX}*.parquet")

    def partitions(self, table: str) -> list[tuple[str, date]]:
        """The (platform, day) partitions that have landed, sorted.

        Directories that are not valid partition names (an unknown platform, a non-ISO date) and
        partitions whose first write never completed are not partitions of this lake and are skipped.
        """
        spec = table_of(table)
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

    def _data_key(self, table: str, platform: str, day: date) -> str:
        return f"{partition_key(table, platform, day)}/{DATA_FILE}"

    def _rejects_key(self, table: str, platform: str, day: date) -> str:
        return f"{REJECTS_DIR}/{partition_key(table, platform, day)}/{REJECTS_FILE}"

    def _files(self, table: str, platform: str, day: date) -> dict[str, str]:
        """A partition's files by name: the keys of its data and its rejects."""
        return {DATA_FILE: self._data_key(table, platform, day), REJECTS_FILE: self._rejects_key(table, platform, day)}

    def _versions_key(self, table: str, platform: str, day: date) -> str:
        key = f"{partition_versions.VERSIONS_DIR}/{partition_key(table, platform, day)}"
        self.store.location(key)
        return key


class LakeSettings(Protocol):
    """What names a lake: its URL, else the data dir it lies in, and the deadline of an object store's operations
    (as `Settings` says them)."""

    @property
    def lake_url(self) -> str | None: ...

    @property
    def data_dir(self) -> Path: ...

    @property
    def lake_deadline_s(self) -> float: ...


def table_glob(root: str, table: str) -> str:
    """The glob of a table's files in the lake whose root (path or URL) is `root`."""
    spec = table_of(table)
    return f"{root}/{spec.name}/{spec.partitioned_by}=*/date=*/*.parquet"


def partition_key(table: str, platform: str, day: date) -> str:
    """``<table>/platform=<p>/date=<d>`` (``league=`` for a table partitioned by league), checked."""
    spec = table_of(table)
    return f"{spec.name}/{spec.partitioned_by}={partition_value(spec, platform)}/date={day_of(day).isoformat()}"


def parent_key(key: str) -> str:
    return key.rsplit("/", 1)[0]


def table_of(table: object) -> Table:
    tables = lake_tables()
    if not isinstance(table, str) or table not in tables:
        raise ValueError(f"unknown table {table!r}: expected one of {sorted(tables)}")
    return tables[table]


def round_file(round_at: datetime) -> str:
    """The file name of a round: its UTC time to the second, which sorts as the rounds do."""
    if round_at.tzinfo is None:
        raise ValueError(f"a round's time must be timezone-aware, got {round_at!r}")
    return f"{ROUND_PREFIX}{round_at.astimezone(UTC).strftime('%Y%m%dT%H%M%SZ')}.parquet"


def partition_value(spec: Table, value: object) -> str:
    """The partition's platform (or league, for a table partitioned by league) as a plain str (a member of the
    enum is accepted), checked against the table's partition values."""
    allowed = [str(v) for v in spec.partition_values]
    if not isinstance(value, str) or value not in allowed:
        raise ValueError(f"unknown {spec.partitioned_by} {value!r}: expected one of {allowed}")
    return allowed[allowed.index(value)]


def day_of(day: object) -> date:
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
