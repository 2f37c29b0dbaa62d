"""The DuckDB warehouse file: schema ``raw`` holds one view per lake table.

The views read the lake through a glob, so a partition that lands is visible to the next query without
touching the warehouse file. That is what lets an analyst keep the file open read-only while pipelines
run: DuckDB cannot open a file read-write while another process holds it, so :func:`ensure_raw_views`
gives up (with a warning) instead of failing or waiting, and the existing views keep serving new data.
The only time a view must change is when its table gets its first partition (DuckDB refuses a glob that
matches no file, so until then the view is an empty relation of the same columns and types); that
switch happens on the first run that finds the file free.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import duckdb
import polars as pl

from pipeline.lake import PARTITION_COLUMNS, Lake
from pipeline.schema import TABLES, Table

RAW_SCHEMA = "raw"
# How long connect_read_only waits for a pipeline's brief read-write hold (ensure_raw_views) to end.
READ_ONLY_CONNECT_TIMEOUT_S = 10.0
_RETRY_INTERVAL_S = 0.05

logger = logging.getLogger("pipeline.warehouse")

_SCALAR_TYPES: dict[type[pl.DataType], str] = {
    pl.String: "VARCHAR",
    pl.Float64: "DOUBLE",
    pl.Int64: "BIGINT",
    pl.Boolean: "BOOLEAN",
    pl.Date: "DATE",
}


def ensure_raw_views(warehouse_path: Path, lake: Lake) -> list[str]:
    """Create or replace schema ``raw`` and its views over the lake; return the views created.

    Returns [] and logs a warning when another process holds the warehouse file (an analyst's read-only
    session): the glob-based views already show new partitions, so a pipeline run must not fail for it.
    """
    warehouse_path.parent.mkdir(parents=True, exist_ok=True)
    try:
        connection = duckdb.connect(str(warehouse_path))
    except (duckdb.IOException, duckdb.ConnectionException) as error:
        if not _is_held_elsewhere(error):
            raise
        logger.warning("warehouse %s is in use elsewhere; raw views left as they are (%s)", warehouse_path, error)
        return []
    with connection:
        connection.begin()
        connection.execute(f"CREATE SCHEMA IF NOT EXISTS {_quote(RAW_SCHEMA)}")
        views = [_create_view(connection, table, lake) for table in TABLES.values()]
        connection.commit()
    return views


def connect_read_only(warehouse_path: Path) -> duckdb.DuckDBPyConnection:
    """Open the warehouse read-only, as analysts do.

    A pipeline holds the file read-write for the few milliseconds of ensure_raw_views, during which
    DuckDB refuses other processes; retry for a while rather than fail on that.
    """
    deadline = time.monotonic() + READ_ONLY_CONNECT_TIMEOUT_S
    while True:
        try:
            return duckdb.connect(str(warehouse_path), read_only=True)
        except duckdb.IOException as error:
            if not _is_held_elsewhere(error) or time.monotonic() > deadline:
                raise
            time.sleep(_RETRY_INTERVAL_S)


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
        return "STRUCT(" + ", ".join(f"{_quote(f.name)} {duckdb_type(f.dtype)}" for f in dtype.fields) + ")"
    if type(dtype) in _SCALAR_TYPES:
        return _SCALAR_TYPES[type(dtype)]
    raise TypeError(f"no DuckDB type for polars type {dtype}: add it to pipeline.warehouse")


def _create_view(connection: duckdb.DuckDBPyConnection, spec: Table, lake: Lake) -> str:
    view = f"{RAW_SCHEMA}.{spec.name}"
    source = _parquet_source(spec, lake) if lake.partitions(spec.name) else _empty_source(spec)
    connection.execute(f"CREATE OR REPLACE VIEW {_quote(RAW_SCHEMA)}.{_quote(spec.name)} AS {source}")
    return view


def _parquet_source(spec: Table, lake: Lake) -> str:
    """SELECT over the table's files, columns in schema order (hive columns would otherwise come last)."""
    hive_types = ", ".join(
        f"{_literal(column)}: {_literal(duckdb_type(spec.polars_schema[column]))}" for column in PARTITION_COLUMNS
    )
    columns = ", ".join(_quote(name) for name in spec.column_names)
    return (
        f"SELECT {columns} FROM read_parquet({_literal(lake.glob(spec.name))}, hive_partitioning = true, "
        f"hive_types = {{{hive_types}}}, union_by_name = true)"
    )


def _empty_source(spec: Table) -> str:
    """A typed relation with no rows, for a table whose glob matches no file yet."""
    columns = ", ".join(
        f"CAST(NULL AS {duckdb_type(dtype)}) AS {_quote(name)}" for name, dtype in spec.polars_schema.items()
    )
    return f"SELECT {columns} WHERE false"


def _is_held_elsewhere(error: duckdb.Error) -> bool:
    """True for DuckDB's refusals to share the file, as opposed to a missing, unreadable or corrupt one.

    Another process holding it gives an IOException "Could not set lock"; a connection of this process
    opened with another mode gives a ConnectionException "different configuration".
    """
    message = str(error)
    return "Could not set lock" in message or "different configuration" in message


def _quote(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"
