"""The lake's scrub: every data and rejects file read back whole, each page checked against its checksum.

A bit flipped on disk in a compressed page mostly still decompresses, into other values: without a check a
reader returns wrong rows and no error. Every page the lake writes carries a CRC-32 of its bytes
(pipeline.engine.lake.store), and the scrub reads every page of every file with the checksums verified, so a
changed page, a page header that no longer parses, or a footer that no longer reads names its file; so does
a file whose columns are not its table's (a flip in a column's name) and one that polars, the lake's own
reader, refuses (it is stricter about page headers than pyarrow). The built models under `_models/` are
left out: they are rebuilt from the lake by `pmw sql`. `pmw verify` reads every file; the scheduled scrub
(scrub.py) the files changed since its last run, through the same functions.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.engine.lake.layout import REJECTS_DIR
from pipeline.engine.lake.parquet_files import CHECKSUMS_KEY, stored_schema
from pipeline.engine.lake.storage import Location
from pipeline.engine.lake.store import Lake
from pipeline.engine.schema import lake_tables


@dataclass(frozen=True)
class BadFile:
    """A lake file (or partition folder) of `table` that cannot be trusted, and why."""

    table: str
    path: Location
    problem: str


@dataclass(frozen=True)
class LakeFile:
    """A data or rejects file of the lake: its table, its key in the store and the schema it must have."""

    table: str
    key: str
    schema: pa.Schema


def lake_files(lake: Lake) -> Iterator[LakeFile]:
    """Every data and rejects file of every table of the lake, table by table."""
    for table, spec in lake_tables().items():
        for rejects, directory in ((False, table), (True, f"{REJECTS_DIR}/{table}")):
            schema = stored_schema(table, rejects)
            for key in lake.store.glob(f"{directory}/{spec.partitioned_by}=*/date=*/*.parquet"):
                yield LakeFile(table, key, schema)


def unreadable_paths(lake: Lake) -> Iterator[BadFile]:
    """The partition folders and files of the lake that cannot even be listed or opened (a glob passes over them)."""
    for table in lake_tables():
        for path in lake.unreadable(table):
            yield BadFile(table, path, "cannot be listed or opened (permissions, disk)")


def verify_file(path: Path | BinaryIO, schema: pa.Schema) -> str | None:
    """Why the file (a path, or a handle on a copy of an object) cannot be trusted, or None when it has `schema`
    and every page of it reads back as written."""
    try:
        with pq.ParquetFile(path, page_checksum_verification=True) as parquet:
            if CHECKSUMS_KEY not in (parquet.metadata.metadata or {}):
                return "written without page checksums, so its pages cannot be checked: rerun its partition"
            if not parquet.schema_arrow.equals(schema, check_metadata=False):
                return f"its columns are not the table's: {_schema_difference(parquet.schema_arrow, schema)}"
            for group in range(parquet.num_row_groups):
                parquet.read_row_group(group)
        for name in schema.names:  # and through the lake's own reader, stricter about page headers
            if not isinstance(path, Path):
                path.seek(0)  # a handle: read again from its start
            pl.read_parquet(path, columns=[name])
    # Whatever reading it raises: OSError, ArrowInvalid, UnicodeDecodeError, and polars' panics on a page that
    # is not what its header says (a PanicException, which is no Exception).
    except (Exception, pl.exceptions.PanicException) as error:
        return f"unreadable: {type(error).__name__}: {str(error)[:300]}"
    return None


def verify_lake(lake: Lake) -> Iterator[tuple[Location, BadFile | None]]:
    """Each lake file in turn with what is wrong with it (None when nothing is); first, the partition directories
    and files that cannot even be listed or opened (which a glob would pass over)."""
    for bad in unreadable_paths(lake):
        yield bad.path, bad
    for file in lake_files(lake):
        path = lake.store.location(file.key)
        problem = verify_lake_file(lake, file)
        yield path, BadFile(file.table, path, problem) if problem is not None else None


def verify_lake_file(lake: Lake, file: LakeFile) -> str | None:
    """`verify_file` on a lake file through one handle (on an object store, its object read in one GET)."""
    try:
        handle = lake.store.open_read(file.key)
    except OSError as error:
        return f"unreadable: {type(error).__name__}: {str(error)[:300]}"
    if handle is None:
        return "unreadable: gone while the scrub ran"
    with handle:
        return verify_file(handle, file.schema)


def _schema_difference(found: pa.Schema, expected: pa.Schema) -> str:
    """The columns of `found` that `expected` lacks or types otherwise, and those it lacks; at most three each."""
    unexpected = [f"{field.name} {field.type}" for field in found
                  if field.name not in expected.names or not expected.field(field.name).equals(field)]
    missing = [name for name in expected.names if name not in found.names]
    return f"unexpected {', '.join(unexpected[:3]) or 'none'}; missing {', '.join(missing[:3]) or 'none'}"
