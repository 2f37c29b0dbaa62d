"""SQL on the warehouse, opened read-only: `pmw query`'s statement printed as a table or written as a file, and
what `pmw shell` runs its statements with.

The warehouse is opened as analysts open it (:func:`connect_read_only`): the write lock is never taken, so a
pipeline that finds the file held only skips rewriting its views; while a pipeline holds it read-write (for
milliseconds, when its views change) the open waits a while, then fails naming the file. Its connection reads the
lake and nothing else (DuckDB's security settings, locked), and an analyst's statement is run only when DuckDB's
parser calls it a reading one (:data:`READING_STATEMENTS`): DuckDB's allowed directories could be written too,
and the lake's files are written by the pipeline alone. A lake with a partition that cannot be read is refused
(the query would leave its rows out without a word). The files are DuckDB's own writers (COPY ... TO, in a
connection of their own that runs nothing else), and standard output gets exactly what the file would hold.
Times are shown in UTC, as the marts count days and hours.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path
from typing import TextIO

import duckdb
import polars as pl

from pipeline.cli.common.failures import FAILED, CommandError
from pipeline.engine.config import ConfigError, Settings, lake_url_from_env
from pipeline.engine.files import some_paths
from pipeline.engine.lake.store import Lake
from pipeline.engine.schema import lake_tables
from pipeline.engine.warehouse.views import WarehouseHeld, connect_read_only, relocate_views

FORMATS = ("table", "csv", "json", "parquet")
DEFAULT_MAX_ROWS = 100
_COPY_OPTIONS = {"csv": "FORMAT csv, HEADER true", "json": "FORMAT json, ARRAY true", "parquet": "FORMAT parquet"}
_BATCH_ROWS = 10_000
_RESULT_NAME = "pmw_query_result"
# The kinds of statement (as DuckDB's parser tells them) an analyst may run: SELECT (with DESCRIBE, SHOW, SUMMARIZE
# and FROM-first), and SET (a variable, or a setting: all locked but the time zone). COPY, EXPORT, ATTACH, EXPLAIN
# (ANALYZE runs what it explains), PREPARE/EXECUTE, PRAGMA (IMPORT DATABASE is one), CALL and the rest are refused.
READING_STATEMENTS = frozenset({duckdb.StatementType.SELECT, duckdb.StatementType.SET})


class QueryError(CommandError):
    """Why a query could not run or be written, in one line; `status` is the exit status it calls for."""

    def __init__(self, message: str, status: int = FAILED) -> None:
        super().__init__(message, status)


def warehouse_lake(path: Path) -> Lake:
    """The lake the warehouse file at `path` is to read: PMW_LAKE_URL's, else the lake beside the file."""
    try:
        url = lake_url_from_env()
    except ConfigError as error:
        raise QueryError(str(error), status=2) from None
    return Lake.of(Settings(data_dir=path.parent, lake_url=url))


def open_warehouse(path: Path, lake: Lake | None = None) -> duckdb.DuckDBPyConnection:
    """The warehouse, read-only, in UTC, reading `lake` (default `warehouse_lake`) and nothing else outside the
    file; QueryError when it is missing, held read-write elsewhere or unreadable, or when a partition of the lake
    cannot be read.

    When the data dir was moved or copied, its views are first pointed at its own lake (`relocate_views`)."""
    require_warehouse(path)
    lake = warehouse_lake(path) if lake is None else lake
    require_readable(lake)
    try:
        relocate_views(path, lake)
    except WarehouseHeld as error:
        raise QueryError(str(error)) from None
    try:
        connection = connect_read_only(path, lake)
    except duckdb.Error as error:
        if "Could not set lock" in str(error):
            raise QueryError(f"{path} is held read-write by another process (a pipeline writing its views, or a "
                             "session opened read-write); try again when it is done") from None
        raise QueryError(f"cannot open {path}: {one_line(error)}") from None
    return connection


def require_readable(lake: Lake) -> None:
    """QueryError naming the lake's partitions that cannot be read: DuckDB's globs pass over them in silence."""
    unreadable = [location for table in lake_tables() for location in lake.unreadable(table)]
    if unreadable:
        raise QueryError(f"{len(unreadable)} partition path(s) of the lake cannot be read, so a query would leave "
                         f"their rows out: {some_paths(unreadable)}; make them readable (permissions, disk) or rerun "
                         "their partitions")


def require_warehouse(path: Path) -> None:
    """QueryError when there is no warehouse file at `path`, saying how to make one."""
    if not path.is_file():
        raise QueryError(f"no warehouse at {path}: run `pmw demo` or `pmw backfill` first (or set PMW_DATA_DIR)")


def one_line(error: BaseException) -> str:
    """DuckDB's message without its blank lines and the caret drawing under the statement, in one line."""
    lines = [line.strip() for line in str(error).splitlines()]
    return " ".join(line for line in lines if line and not line.startswith("LINE ") and set(line) != {"^"})


def split_statements(sql: str) -> list[str]:
    """The statements of `sql`, in order; QueryError when it does not parse."""
    try:
        return [statement.query for statement in duckdb.extract_statements(sql)]
    except duckdb.Error as error:
        raise QueryError(one_line(error)) from None


def single_statement(sql: str) -> str:
    """`sql` when it is exactly one statement; QueryError (status 2: a bad argument) otherwise."""
    statements = split_statements(sql)
    if len(statements) != 1:
        raise QueryError(f"expected one SQL statement, got {len(statements)}", status=2)
    return statements[0]


def require_reading(sql: str) -> None:
    """QueryError naming the kind of `sql` (one statement) unless DuckDB's parser calls it a reading one."""
    kind = duckdb.extract_statements(sql)[0].type
    if kind not in READING_STATEMENTS:
        raise QueryError(f"{kind.name} statement refused: a query reads only ("
                         f"{', '.join(sorted(k.name for k in READING_STATEMENTS))}); the lake's files are written by "
                         "the pipeline alone")


def relation(connection: duckdb.DuckDBPyConnection, sql: str) -> duckdb.DuckDBPyRelation:
    """The result of one statement, `sql`, once it is known to be a reading one."""
    require_reading(sql)
    try:
        return connection.sql(sql)
    except duckdb.Error as error:
        raise QueryError(one_line(error)) from None


def print_table(result: duckdb.DuckDBPyRelation, max_rows: int, out: TextIO) -> None:
    """The first `max_rows` rows as an aligned text table, then how many rows there are in all."""
    total = 0
    try:
        reader = result.to_arrow_reader(_BATCH_ROWS)
        shown = [pl.from_arrow(reader.schema.empty_table())]
        for batch in reader:
            if total < max_rows:
                shown.append(pl.from_arrow(batch.slice(0, max_rows - total)))
            total += batch.num_rows
    except duckdb.Error as error:
        raise QueryError(one_line(error)) from None
    frame = pl.concat(shown)
    with pl.Config(tbl_rows=-1, tbl_cols=-1, tbl_width_chars=10_000, fmt_str_lengths=80,
                   tbl_hide_dataframe_shape=True, tbl_hide_column_data_types=True):
        print(frame, file=out)
    print(f"first {max_rows} of {total:,} rows (--max-rows shows more, --format csv all)" if total > max_rows
          else f"{total:,} row{'' if total == 1 else 's'}", file=out)


def write_file(result: duckdb.DuckDBPyRelation, file_format: str, path: Path) -> int:
    """The whole result written to `path` by DuckDB's COPY, streamed: never held in memory at once; returns the
    rows written. The writer is a connection of its own: the reader's may write no file."""
    with duckdb.connect() as writer:
        try:
            writer.register(_RESULT_NAME, result.to_arrow_reader(_BATCH_ROWS))
            [(rows,)] = writer.execute(
                f"COPY {_RESULT_NAME} TO {_literal(str(path))} ({_COPY_OPTIONS[file_format]})").fetchall()
        except duckdb.Error as error:
            raise QueryError(one_line(error)) from None
    return int(rows)


def write_stdout(result: duckdb.DuckDBPyRelation, file_format: str, out: TextIO) -> None:
    """What `write_file` would write, to `out`."""
    with tempfile.TemporaryDirectory(prefix="pmw-query-") as scratch:
        path = Path(scratch) / f"result.{file_format}"
        write_file(result, file_format, path)
        with path.open(encoding="utf-8", newline="") as written:
            shutil.copyfileobj(written, out)


def run_query(path: Path, sql: str, file_format: str = "table", output: Path | None = None,
              max_rows: int = DEFAULT_MAX_ROWS, out: TextIO | None = None) -> int | None:
    """Run `sql` on the warehouse at `path` and print or write its result; returns the rows written to `output`,
    None when the result was printed. QueryError says why it could not run."""
    out = sys.stdout if out is None else out
    if file_format == "parquet" and output is None:
        raise QueryError("--format parquet writes a file: give it with -o FILE", status=2)
    if file_format == "table" and output is not None:
        raise QueryError("-o writes csv, json or parquet: give --format too", status=2)
    statement = single_statement(sql)
    lake = warehouse_lake(path)
    if output is not None and output.resolve().is_relative_to(lake.root):
        raise QueryError(f"{output} is in the lake, whose files are written by the pipeline alone: write the "
                         "result elsewhere", status=2)
    with open_warehouse(path, lake) as connection:
        result = relation(connection, statement)
        if file_format == "table":
            print_table(result, max_rows, out)
        elif output is not None:
            return write_file(result, file_format, output)
        else:
            write_stdout(result, file_format, out)
    return None


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"
