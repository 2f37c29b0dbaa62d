"""The floor of the normalisation benchmark: the least any exact-typed path from JSON bytes to Parquet can take.

The same response bodies read by pyarrow.json with an explicit schema of the table's documented fields, on one
thread (it refuses a value of the wrong JSON type: a number in a text field, a string in a number field), the
records flattened out of each body's items array, and the result written as Parquet (zstd), nothing else: no
times parsed, no sort, no checks, no rejects. Maps (keyed by ids) and free-form objects have no Arrow type such a
reader can check, so they are left out of the read, which only makes the floor lower. If 10x the baseline is
above the floor, no exact-typed pipeline reaches it on this machine.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa

    from benchmarks.normalization import Responses
    from pipeline.engine.schema import Field


def land(partitions: list[Responses], directory: Path) -> None:
    """Read every partition's bodies with an explicit schema and write its records as one Parquet file."""
    import pyarrow as pa
    import pyarrow.json as pj
    import pyarrow.parquet as pq

    from pipeline.engine.schema import TABLES

    read_options = pj.ReadOptions(use_threads=False, block_size=_largest(partitions) + 1)
    for p in partitions:
        schema = pa.schema([(p.items_key, pa.list_(_record_type(TABLES[p.table].fields)))])
        parse_options = pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore")
        items = [
            pj.read_json(io.BytesIO(body), read_options=read_options, parse_options=parse_options)
            .column(p.items_key)
            .combine_chunks()
            .flatten()
            for body in p.bodies
        ]
        records = pa.Table.from_struct_array(pa.chunked_array(items, type=schema.field(0).type.value_type))
        pq.write_table(records, directory / f"{p.table}-{p.platform}.parquet", compression="zstd")


def _largest(partitions: list[Responses]) -> int:
    return max(len(body) for p in partitions for body in p.bodies)


def _record_type(fields: tuple[Field, ...]) -> pa.StructType:
    import pyarrow as pa

    return pa.struct([(f.wire, _arrow_type(f)) for f in fields if _readable(f)])


def _readable(field: Field) -> bool:
    return field.kind not in ("map", "json")


def _arrow_type(field: Field) -> Any:
    """The Arrow type a field is read as: its JSON type, checked by the reader (times as sent, not parsed)."""
    import pyarrow as pa

    if field.kind == "struct":
        return _record_type(field.children)
    if field.kind == "list":
        return pa.list_(_record_type(field.children) if field.children else _scalar(field.dtype))
    if field.kind == "timestamp":
        return pa.string() if field.time_format == "iso" else pa.float64()
    assert field.dtype is not None, f"scalar field {field.wire} has no dtype"
    return _scalar(field.dtype)


def _scalar(dtype: Any) -> Any:
    import polars as pl
    import pyarrow as pa

    return {pl.String: pa.string(), pl.Float64: pa.float64(), pl.Boolean: pa.bool_()}[type(dtype)]
