"""The DuckDB warehouse file: schema ``raw`` holds one view per lake table.

The views read the lake through a glob, so a partition that lands is visible to the next query without
touching the warehouse file. That is what lets an analyst keep the file open read-only while pipelines
run: DuckDB cannot open a file read-write while another process holds it, so :func:`ensure_raw_views`
gives up (with a warning) instead of failing or waiting, and the existing views keep serving new data.
A view's definition depends on nothing but the lake's path: a table with no partition yet is an empty
relation of the same columns and types through the very same view, so landing a table's first partition
changes nothing in the file either. A process that has already written the views into the file, and finds
the file unchanged since, does not open it again (every asset of a run asks).
"""

from __future__ import annotations

import logging
import os
import re
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import duckdb
import polars as pl

from pipeline.engine.lake.layout import table_glob
from pipeline.engine.lake.storage import Location, open_store
from pipeline.engine.lake.store import Lake
from pipeline.engine.schema import Table, lake_tables

RAW_SCHEMA = "raw"
# The comment on every view pmw writes: a build drops the views of its schemas that carry it and are no longer
# in the project, and never one without it (a view an analyst made there).
OWNED_VIEW_COMMENT = "written by pm-warehouse; replaced or dropped by its builds"
# How long connect_read_only waits for a pipeline's brief read-write hold (ensure_raw_views) to end.
READ_ONLY_CONNECT_TIMEOUT_S = 10.0
_RETRY_INTERVAL_S = 0.05
# The settings a reader's statements may still change once its connection is confined (times shown in a zone).
READER_CONFIGS = ("TimeZone",)
# A reader's session parses each lake file's footer once, not once per query (benchmarks/README.md, queries):
# DuckDB keeps the parsed footer only while the file's modification time is unchanged, and the lake replaces a
# partition by renaming a new file over it, so a replaced partition is read afresh.
READER_SETTINGS: dict[str, bool] = {"parquet_metadata_cache": True}

logger = logging.getLogger(__name__)

_SCALAR_TYPES: dict[type[pl.DataType], str] = {
    pl.String: "VARCHAR",
    pl.Float64: "DOUBLE",
    pl.Int64: "BIGINT",
    pl.Boolean: "BOOLEAN",
    pl.Date: "DATE",
}


def ensure_raw_views(warehouse_path: Path, lake: Lake) -> list[str]:
    """Create or replace schema ``raw`` and its views over the lake; return the views written.

    Returns [] without opening the file when this process wrote these very views into it and the file has
    not changed since (its identity, size and modification time are those seen after that write): opening a
    DuckDB file costs tens of milliseconds, and every asset of every run asks. Returns [] and logs a warning
    when another process holds the warehouse file (an analyst's read-only session): the glob-based views
    already show new partitions, so a pipeline run must not fail for it.
    """
    views = raw_views(lake)
    with _WRITTEN_LOCK:
        if _WRITTEN.get(warehouse_path) == (_file_stamp(warehouse_path), views):
            return []
    connection = _open_for_writing(warehouse_path, "raw views left as they are", lake)
    if connection is None:
        return []
    with connection:
        connection.begin()
        connection.execute(f"CREATE SCHEMA IF NOT EXISTS {quote_identifier(RAW_SCHEMA)}")
        for view in views:
            view.write(connection)
        connection.commit()
    with _WRITTEN_LOCK:
        _WRITTEN[warehouse_path] = (_file_stamp(warehouse_path), views)
    return [f"{view.schema}.{view.name}" for view in views]


def connect_read_only(warehouse_path: Path, lake: Lake | None = None) -> duckdb.DuckDBPyConnection:
    """Open the warehouse read-only, as analysts do, in UTC, able to read `lake` wherever it lives (an object
    store's file system registered with the connection; without `lake`, the local lake beside the file, where a
    data dir keeps it by default) and nothing else outside the file.

    A pipeline holds the file read-write for the few milliseconds of ensure_raw_views, during which
    DuckDB refuses other processes; retry for a while rather than fail on that. The connection is confined by
    DuckDB's own security settings (:func:`confine`).
    """
    deadline = time.monotonic() + READ_ONLY_CONNECT_TIMEOUT_S
    while True:
        try:
            connection = duckdb.connect(str(warehouse_path), read_only=True)
        except duckdb.IOException as error:
            if not _is_held_elsewhere(error) or time.monotonic() > deadline:
                raise
            time.sleep(_RETRY_INTERVAL_S)
            continue
        if lake is not None:
            lake.store.attach(connection)
        confine(connection, lake.url if lake is not None else open_store(None, warehouse_path.parent).url)
        return connection


def confine(connection: duckdb.DuckDBPyConnection, lake_url: str) -> None:
    """DuckDB's security settings on a reader's connection: no file, URL or extension outside the lake at
    `lake_url` (``enable_external_access`` off, ``allowed_directories`` the lake's root, so the views' globs and
    the marts' files still read), in UTC, and the configuration locked so that no statement undoes it (``SET
    TimeZone`` excepted), tuned for reading the lake (:func:`tune_reader`). DuckDB's allowed directories can be
    written as well as read: what keeps the lake's files from being written is the reading statements `pmw query`
    and `pmw shell` accept (:mod:`pipeline.cli.query.warehouse`)."""
    connection.execute("SET TimeZone = 'UTC'")
    tune_reader(connection)
    connection.execute("SET allowed_directories = ?", [[f"{lake_url}/"]])
    connection.execute("SET allowed_configs = ?", [list(READER_CONFIGS)])
    connection.execute("SET enable_external_access = false")
    connection.execute("SET lock_configuration = true")


def tune_reader(connection: duckdb.DuckDBPyConnection) -> None:
    """The READER_SETTINGS on a connection that reads the raw views."""
    for name, value in READER_SETTINGS.items():
        connection.execute(f"SET {name} = {str(value).lower()}")


class WarehouseHeld(Exception):
    """The warehouse file must be written but another process holds it."""


def relocate_views(warehouse_path: Path, lake: Lake) -> list[str]:
    """Point the views pmw wrote at `lake` when they read another lake; return the views rewritten.

    A view holds its lake's absolute path (DuckDB resolves a relative one against the reader's working directory,
    not the file's: a relative path would read nothing, in silence, from anywhere else), so a data dir moved or
    copied elsewhere would go on reading the original lake, or an empty one. Every pmw command that opens the
    warehouse calls this first: the raw views are written again for `lake`, and every view over one Parquet file
    of the old lake (the table marts) is pointed at the same file under `lake`. Reads the catalogue read-only and
    opens the file read-write only when a view must change; WarehouseHeld when it must but another process holds
    the file.
    """
    catalogue = _file_view_catalogue(warehouse_path, None)
    if catalogue is None:  # no file yet, or held read-write elsewhere: the caller's own open says so
        return []
    own = {(view.schema, view.name): view for view in raw_views(lake)}
    foreign = [key for key, (sql, _) in catalogue.items() if key in own and _reads_another_lake(sql, lake)]
    if not foreign:
        return []
    old_root = _lake_root_of(catalogue[foreign[0]][0], foreign[0][1])
    moved = [
        parquet_view(schema, name, lake.url + path.removeprefix(old_root))
        for (schema, name), (sql, _) in catalogue.items()
        if schema != RAW_SCHEMA and (path := _single_parquet_file(sql)) is not None and path.startswith(f"{old_root}/")
    ]
    views = [own[key] for key in foreign] + moved
    connection = _open_for_writing(warehouse_path, "views left reading the other lake", lake)
    if connection is None:
        raise WarehouseHeld(
            f"the views of {warehouse_path} read the lake {old_root}, not {lake.url} (the data dir was moved or "
            "copied), and another process holds the file, so they cannot be pointed at this lake now; close the "
            "other session and run again"
        )
    with connection:
        connection.begin()
        for view in views:
            view.write(connection)
        connection.commit()
    return [f"{view.schema}.{view.name}" for view in views]


_READ_PARQUET = re.compile(r"read_parquet\('((?:[^']|'')*)'")


def _lake_root_of(raw_view_sql: str, table: str) -> str:
    """The lake a raw view of `table` reads (the root of its glob, :func:`table_glob`: a path or a URL)."""
    match = _READ_PARQUET.search(raw_view_sql)
    glob = match.group(1).replace("''", "'") if match else ""
    root = glob.rsplit("/", 4)[0] if glob.count("/") >= 4 else None
    if root is None or table_glob(root, table) != glob:
        raise ValueError(f"raw view {table} does not read a lake's files: {raw_view_sql}")
    return root


def _reads_another_lake(raw_view_sql: str, lake: Lake) -> bool:
    return f"{literal(lake.url)[:-1]}/" not in raw_view_sql


def _single_parquet_file(view_sql: str) -> str | None:
    """The file (path or URL) a view made by :func:`parquet_view` reads; None for any other view."""
    match = _READ_PARQUET.search(view_sql)
    if match is None or "*" in match.group(1):
        return None
    return match.group(1).replace("''", "'")


def published_files(warehouse_path: Path) -> dict[tuple[str, str], str]:
    """(schema, view) -> the file (path or URL) of each view pmw wrote over one Parquet file (a table model as
    readers see it); {} while there is no warehouse file. Read-only, waiting out a pipeline's brief write."""
    if not warehouse_path.exists():
        return {}
    with connect_read_only(warehouse_path) as connection:
        catalogue = _view_catalogue(connection, None, owned_only=True)
    return {key: path for key, (sql, _) in catalogue.items() if (path := _single_parquet_file(sql)) is not None}


def foreign_raw_views(warehouse_path: Path, lake: Lake) -> list[str]:
    """The raw views of the warehouse file that read another lake than `lake`.

    A view holds its lake's absolute path (DuckDB resolves a relative one against the reader's working
    directory, not the file's), so a data dir copied or moved elsewhere keeps reading the original lake until a
    pmw command runs on the copy and writes its views again. Reads the file's catalogue read-only.
    """
    if not warehouse_path.exists():
        return []
    with connect_read_only(warehouse_path) as connection:
        rows = connection.execute(
            "SELECT view_name, sql FROM duckdb_views() WHERE NOT internal AND schema_name = ?", [RAW_SCHEMA]
        ).fetchall()
    own = {view.name: view for view in raw_views(lake)}
    return sorted(f"{RAW_SCHEMA}.{name}" for name, sql in rows if name in own and _reads_another_lake(sql, lake))


def duckdb_type(dtype: pl.DataType) -> str:
    """The DuckDB type that read_parquet reports for a column polars wrote with ``dtype``.

    The empty views are built from these, so they must be exactly what DuckDB reads back: a UTC
    Datetime is a Parquet timestamp adjusted to UTC, which DuckDB reads as TIMESTAMP WITH TIME ZONE.
    """
    if isinstance(dtype, pl.Datetime):
        return "TIMESTAMP WITH TIME ZONE" if dtype.time_zone == "UTC" else "TIMESTAMP"
    if isinstance(dtype, pl.List):
        return f"{duckdb_type(dtype.inner)}[]"
    if isinstance(dtype, pl.Struct):
        return "STRUCT(" + ", ".join(f"{quote_identifier(f.name)} {duckdb_type(f.dtype)}" for f in dtype.fields) + ")"
    if type(dtype) in _SCALAR_TYPES:
        return _SCALAR_TYPES[type(dtype)]
    raise TypeError(f"no DuckDB type for polars type {dtype}: add it to pipeline.engine.warehouse.views")


@dataclass(frozen=True)
class View:
    """A view of the warehouse file: ``schema.name AS query``."""

    schema: str
    name: str
    query: str

    @property
    def statement(self) -> str:
        return f"CREATE OR REPLACE VIEW {qualified_name(self.schema, self.name)} AS {self.query}"

    def write(self, connection: duckdb.DuckDBPyConnection) -> None:
        """Create or replace the view in `connection`'s database, marked as pmw's own."""
        connection.execute(self.statement)
        connection.execute(
            f"COMMENT ON VIEW {qualified_name(self.schema, self.name)} IS {literal(OWNED_VIEW_COMMENT)}"
        )


def raw_views(lake: Lake) -> list[View]:
    """The views of schema ``raw`` exactly as ensure_raw_views creates them, for catalogues built elsewhere."""
    return [View(RAW_SCHEMA, spec.name, _lake_source(spec, lake)) for spec in lake_tables().values()]


# What this process last wrote into each warehouse file, with the file's stamp right after: ensure_raw_views
# skips the file while both still hold. A change by any other writer changes the stamp.
_WRITTEN: dict[Path, tuple[tuple[int, int, int] | None, list[View]]] = {}
_WRITTEN_LOCK = threading.Lock()


def _file_stamp(path: Path) -> tuple[int, int, int] | None:
    """The file's inode, size and modification time in nanoseconds; None when it does not exist."""
    try:
        status = os.stat(path)
    except FileNotFoundError:
        return None
    return status.st_ino, status.st_size, status.st_mtime_ns


def parquet_view(schema: str, name: str, path: Location) -> View:
    """A view over one Parquet file, so that replacing the file changes what the view reads, not the view."""
    return View(schema, name, f"SELECT * FROM read_parquet({literal(str(path))})")


def sync_views(warehouse_path: Path, views: Sequence[View], built: duckdb.DuckDBPyConnection,
               lake: Lake | None = None) -> bool:
    """Make the file's views in the schemas of ``views`` exactly ``views``; return whether the file was written.

    ``built`` is a connection in which ``views`` already exist (the session that built them): DuckDB's
    catalogue there says what each view is once parsed (its SQL and its columns), and the file is opened
    read-write only when its own catalogue differs. Runs that change no view definition therefore never
    take the write lock, and a run that must but finds the file held elsewhere (an analyst's read-only
    session) logs a warning and carries on, like ensure_raw_views: views over files keep serving whatever
    the files hold, and the next run that finds the file free brings the definitions up to date.
    ``lake``: the lake the views read, wherever it lives.
    The views pmw wrote earlier in those schemas (marked with OWNED_VIEW_COMMENT) that are not in ``views`` are
    dropped; an analyst's own views there (unmarked) and tables are left alone, unless one has the name of a
    view in ``views``, which replaces it.
    """
    schemas = sorted({view.schema for view in views})
    names = {(view.schema, view.name) for view in views}
    wanted = {key: shape for key, shape in _view_catalogue(built, schemas).items() if key in names}
    if _file_view_catalogue(warehouse_path, schemas) == wanted:
        return False
    connection = _open_for_writing(
        warehouse_path, f"views of {', '.join(schemas)} left as they are until a run finds it free", lake
    )
    if connection is None:
        return False
    with connection:
        connection.begin()
        for schema in schemas:
            connection.execute(f"CREATE SCHEMA IF NOT EXISTS {quote_identifier(schema)}")
        for schema, name in _view_catalogue(connection, schemas, owned_only=True):
            connection.execute(f"DROP VIEW {qualified_name(schema, name)}")
        for view in views:
            view.write(connection)
        connection.commit()
    return True


def _open_for_writing(warehouse_path: Path, consequence: str,
                      lake: Lake | None) -> duckdb.DuckDBPyConnection | None:
    """A read-write connection that reads `lake` (a view is bound to its files when written), or None (with a
    warning saying `consequence`) while another process holds the file: an analyst's session must never make a
    pipeline run fail."""
    warehouse_path.parent.mkdir(parents=True, exist_ok=True)
    try:
        connection = duckdb.connect(str(warehouse_path))
    except (duckdb.IOException, duckdb.ConnectionException) as error:
        if not _is_held_elsewhere(error):
            raise
        logger.warning("warehouse %s is in use elsewhere; %s (%s)", warehouse_path, consequence, error)
        return None
    if lake is not None:
        lake.store.attach(connection)
    return connection


def _view_catalogue(
    connection: duckdb.DuckDBPyConnection, schemas: Sequence[str] | None, owned_only: bool = False
) -> dict[tuple[str, str], tuple[str, list[str]]]:
    """(schema, view) -> (the view's SQL as DuckDB stores it, its columns with their types), in `schemas` (None:
    all); with `owned_only`, only the views pmw wrote."""
    rows = connection.execute(
        """
        SELECT v.schema_name, v.view_name, v.sql, list(c.column_name || ' ' || c.data_type ORDER BY c.column_index)
        FROM duckdb_views() AS v
        JOIN duckdb_columns() AS c
            ON c.database_oid = v.database_oid AND c.schema_oid = v.schema_oid AND c.table_oid = v.view_oid
        WHERE NOT v.internal AND v.database_name = current_database() AND (? OR list_contains(?, v.schema_name))
            AND (NOT ? OR v.comment IS NOT DISTINCT FROM ?)
        GROUP BY ALL
        """,
        [schemas is None, list(schemas or []), owned_only, OWNED_VIEW_COMMENT],
    ).fetchall()
    return {(schema, name): (sql, columns) for schema, name, sql, columns in rows}


def _file_view_catalogue(
    warehouse_path: Path, schemas: Sequence[str] | None
) -> dict[tuple[str, str], tuple[str, list[str]]] | None:
    """The file's catalogue of pmw's views in `schemas` (None: all), read without the write lock; None when the file
    is missing or cannot be read now."""
    if not warehouse_path.exists():
        return None
    try:
        connection = duckdb.connect(str(warehouse_path), read_only=True)
    except (duckdb.IOException, duckdb.ConnectionException) as error:
        if not _is_held_elsewhere(error):
            raise
        return None
    with connection:
        return _view_catalogue(connection, schemas, owned_only=True)


def _lake_source(spec: Table, lake: Lake) -> str:
    return _source_over(spec, lake.glob(spec.name))


@cache  # every asset of every run asks for the raw views: the text of each is made once per table and lake
def _source_over(spec: Table, glob: str) -> str:
    """SELECT over the table's files, columns in schema order (hive columns would otherwise come last).

    While the glob matches no file, ``allow_empty`` makes ``read_parquet`` a relation with no rows (and one
    column of its own), and the typed empty relation it is united with by name gives every column its
    type: the view has the same columns and types before the first partition lands as after, so that landing
    never has to rewrite it. Once files exist the empty relation adds nothing, and a filter on ``platform``
    or ``date`` still prunes partitions by path. The typed relation comes first, its partition columns leading: a
    union passes at least its first column along, so a query that reads no column (``count(*)``) reads a
    partition column, which the path gives, not the first column of every file (15x slower for a month of trades).

    No ``union_by_name`` across the files: DuckDB takes the columns from the first file and matches every
    other file's columns to them by name (their order may differ). With ``union_by_name`` it read every
    file's footer to bind each query, 7-11 ms for a month of trades against 1-2 ms without
    (benchmarks/README.md), and it is not needed: every file is written by
    :class:`pipeline.engine.lake.store.Lake` against ``pipeline.engine.schema``, which refuses a frame of any
    other schema. The consequence comes with a schema change: once a column is added (or renamed), a query
    of the view fails with DuckDB's "schema mismatch in glob" error until the partitions written before the
    change are rewritten; it never shows them with NULLs.
    """
    hive_types = ", ".join(
        f"{literal(column)}: {literal(duckdb_type(spec.polars_schema[column]))}" for column in spec.partition_columns
    )
    columns = ", ".join(quote_identifier(name) for name in spec.column_names)
    leading = [*spec.partition_columns, *(name for name in spec.column_names if name not in spec.partition_columns)]
    typed_nulls = ", ".join(
        f"CAST(NULL AS {duckdb_type(spec.polars_schema[name])}) AS {quote_identifier(name)}" for name in leading
    )
    files = (f"read_parquet({literal(glob)}, hive_partitioning = true, "
             f"hive_types = {{{hive_types}}}, allow_empty = true)")
    return f"SELECT {columns} FROM (SELECT {typed_nulls} WHERE false UNION ALL BY NAME SELECT * FROM {files})"


def _is_held_elsewhere(error: duckdb.Error) -> bool:
    """True for DuckDB's refusals to share the file, as opposed to a missing, unreadable or corrupt one.

    Another process holding it gives an IOException "Could not set lock"; a connection of this process
    opened with another mode gives a ConnectionException "different configuration".
    """
    message = str(error)
    return "Could not set lock" in message or "different configuration" in message


def quote_identifier(identifier: str) -> str:
    """A DuckDB identifier, quoted so that any name (a keyword, a quote in it) stays one identifier."""
    return '"' + identifier.replace('"', '""') + '"'


def literal(text: str) -> str:
    """A DuckDB string literal of `text`."""
    return "'" + text.replace("'", "''") + "'"


def qualified_name(schema: str, name: str) -> str:
    """``schema.name``, each part quoted."""
    return f"{quote_identifier(schema)}.{quote_identifier(name)}"
