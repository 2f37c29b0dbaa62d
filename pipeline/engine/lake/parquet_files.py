"""The lake's Parquet files: how rows are written (sorted, in row groups, with page checksums, a page index and
per-column codecs), and the schema a file declares.

Parquet writer options were chosen by measuring analysts' queries through the raw views against a native DuckDB
table (benchmarks/queries.py; figures in benchmarks/README.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import date
from typing import Any, BinaryIO

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.engine.lake.layout import table_of
from pipeline.engine.schema import REJECTS_SCHEMA, Table

# 122_880 rows is DuckDB's own row-group size: large enough for good compression and cheap footers,
# small enough that min/max statistics let a reader skip most of a day's trades for one market (half or
# twice that size was slower on full scans or on the one-market query respectively). A page index (each page's
# min/max and offset) lets a reader skip the pages within a row group that a filter rules out.
# Every page of every file carries a CRC-32 of its bytes, and the file's key-value metadata says so: the scrub
# (pipeline.engine.lake.verify) reads every page back against it, and names a file written without them.
CHECKSUMS_KEY = b"pm-warehouse.page_checksums"
ROW_GROUP_SIZE = 122_880
# Strings (and every other column) are zstd-compressed: it shrinks them 2-5x. Floats (dictionary indices of
# near-distinct values) and timestamps (delta-packed) are stored uncompressed: zstd saved only 15-25% and 47% of
# their bytes, and decompressing them was most of what reading them cost (benchmarks/README.md: queries 10-20%
# faster through the raw views for a lake 9% larger).
COMPRESSION = "zstd"
UNCOMPRESSED = "none"
# Timestamps are stored delta-encoded, not dictionary-encoded: sorted by (key, time) their deltas pack into
# a few bits, while a dictionary of near-distinct instants is as large as the column (a 700 KB dictionary
# page per row group of a day's trades) and dominated the cost of reading it.
TIMESTAMP_ENCODING = "DELTA_BINARY_PACKED"


def check_schema(what: str, got: pl.Schema, expected: pl.Schema) -> None:
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


def check_rows_belong(table: str, rows: pl.DataFrame, platform: str, day: date) -> None:
    """The partition columns are dropped on write, so a row of another partition would be silently moved."""
    dimension = table_of(table).partitioned_by
    outside = rows.filter(((pl.col(dimension) != platform) | (pl.col("date") != day)).fill_null(True)).height
    if outside:
        raise ValueError(
            f"table {table}: {outside} of {rows.height} rows are not in partition {dimension}={platform} date={day}"
        )


def write_rows(file: BinaryIO, spec: Table, platform: str, day: date, batches: Iterable[pl.DataFrame]) -> int:
    """Write the batches as the file's rows, each sorted, checking that together they are; return the count."""
    ordered = _in_sort_order(spec, (_file_frame(spec, batch, platform, day) for batch in batches))
    return write_frames(file, ordered, arrow_schema(spec.polars_schema, drop=spec.partition_columns))


def _file_frame(spec: Table, rows: pl.DataFrame, platform: str, day: date) -> pl.DataFrame:
    """A batch as stored: checked, partition columns dropped, rows in the table's sort order."""
    check_schema(f"table {spec.name}", rows.schema, spec.polars_schema)
    check_rows_belong(spec.name, rows, platform, day)
    return rows.drop(spec.partition_columns).sort(spec.sort_key, nulls_last=True, maintain_order=True)


def stored_schema(table: str, rejects: bool = False) -> pa.Schema:
    """The Arrow schema of the table's data files (its columns but the partition ones), or of its rejects files."""
    if rejects:
        return arrow_schema(REJECTS_SCHEMA)
    spec = table_of(table)
    return arrow_schema(spec.polars_schema, drop=spec.partition_columns)


def arrow_schema(schema: pl.Schema, drop: tuple[str, ...] = ()) -> pa.Schema:
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


def write_frames(file: BinaryIO, frames: Iterable[pl.DataFrame], schema: pa.Schema) -> int:
    """Write frames as one Parquet file in row groups of ROW_GROUP_SIZE rows; return the rows written.

    Rows are buffered only until a row group is full, whatever the sizes of the frames, so that small
    batches still make full row groups (good compression, cheap footers) and large ones stay bounded.
    """
    pending: list[pa.Table] = []
    pending_rows = rows = 0
    marked = schema.with_metadata({**(schema.metadata or {}), CHECKSUMS_KEY: b"crc32"})
    with pq.ParquetWriter(file, marked, write_statistics=True, write_page_checksum=True, write_page_index=True,
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
    numbers = {path for path, dtype in leaves if pa.types.is_floating(dtype)} | set(timestamps)
    return {
        "compression": {path: UNCOMPRESSED if path in numbers else COMPRESSION for path, _ in leaves},
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
