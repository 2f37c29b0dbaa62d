"""The toolkit of the platforms' own readers (pipeline.engine.normalize.polymarket, .kalshi): field constructors
for their records, `read` (exact JSON types, as the wire frame), and `finish`, which derives a table's rows from
the checked frame with the reader's polars expressions and rejects what cannot be a row."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import repeat
from typing import Any

import polars as pl

from pipeline.engine.normalize.rows import quoted, rejects_frame, utc, value_reason
from pipeline.engine.normalize.wire_frame import build, shown
from pipeline.engine.normalized import Normalized
from pipeline.engine.schema import Field, Source, Table

REASON = "_reason"  # per-row reasons while a frame is judged; never a column of the rows


class ShapeError(ValueError):
    """A response body is not of the shape its endpoint sends, so that no record can be read from it."""


def shape_error(where: str, expected: str, body: Any) -> ShapeError:
    return ShapeError(f"{where}: expected {expected}, got {shown(body)}")


def text(wire: str, *, required: bool = False) -> Field:
    return Field(wire, dtype=pl.String(), required=required)


def number(wire: str, *, required: bool = False, non_negative: bool = False) -> Field:
    return Field(wire, dtype=pl.Float64(), required=required, non_negative=non_negative)


def flag(wire: str, *, required: bool = False) -> Field:
    return Field(wire, dtype=pl.Boolean(), required=required)


def iso_text(wire: str, *, required: bool = False) -> Field:
    """An ISO-8601 time with a UTC offset, checked and parsed like the unified API's times."""
    return Field(wire, kind="timestamp", time_format="iso", required=required)


def unix_number(wire: str, *, required: bool = False) -> Field:
    """A Unix time in seconds, checked and parsed (one in milliseconds is refused, told apart by size)."""
    return Field(wire, kind="timestamp", time_format="unix_s", required=required)


def texts(wire: str) -> Field:
    return Field(wire, kind="list", dtype=pl.String())


def objects(wire: str, *children: Field) -> Field:
    """An array of objects, of which only `children` are read."""
    return Field(wire, kind="list", children=children)


def struct(wire: str, *children: Field, required: bool = False) -> Field:
    """An object, of which only `children` are read."""
    return Field(wire, kind="struct", children=children, required=required)


@dataclass(frozen=True)
class Native:
    """The records of a response read as `fields`: those of the right JSON types with their frame (row i is
    `kept[i]`, columns named `field.name`, times not yet parsed), and the others with the reason."""

    fields: tuple[Field, ...]
    kept: list[Any]
    frame: pl.DataFrame
    rejected: list[tuple[Any, str]]

    def values(self, wire: str) -> list[Any]:
        """The values of a field of the kept records as sent, for what only Python can read (JSON in strings)."""
        return list(map(dict.get, self.kept, repeat(wire)))

    def with_columns(self, *columns: pl.Series) -> Native:
        return replace(self, frame=self.frame.with_columns(columns))


def read(fields: tuple[Field, ...], records: list[Any]) -> Native:
    kept, frame, rejected = build(fields, records)
    return Native(fields, kept, frame, rejected)


def direct_lineage(platform: str, day: dt.date, fetched_at: dt.datetime) -> dict[str, Any]:
    """The values of the columns a platform's records do not carry: partition, lineage, and `last_synced_at`,
    which is the fetch itself when the warehouse reads the platform directly."""
    moment = utc(fetched_at)
    return {
        "platform": platform,
        "date": day,
        "_source": Source.DIRECT.value,
        "_fetched_at": moment,
        "last_synced_at": moment,
    }


def decimal(column: pl.Expr, wire: str) -> tuple[pl.Expr, pl.Expr]:
    """A number sent as a decimal string (`"0.4200"`, `"12232699.6"`): its value, and per row the problem when
    the text is no number (never read as null: a fallback field would then be used silently)."""
    value = column.cast(pl.Float64, strict=False)
    problem = pl.when(column.is_not_null() & value.is_null()).then(
        pl.concat_str([pl.lit(f"field '{wire}': not a decimal number: "), quoted(column)])
    )
    return value, problem


def finish(
    table: Table,
    native: Native,
    columns: Mapping[str, pl.Expr],
    problems: Sequence[pl.Expr],
    lineage: Mapping[str, Any],
) -> Normalized:
    """Rows of `table` from a native frame; the records that cannot be rows become rejects with their first problem.

    Problems are looked for in order: the native fields' own (a required field missing, a time that does not
    parse), then `problems` (the reader's: a value it cannot map), then any required column left without a
    value. Columns missing from `columns` come from `lineage` or stay null: the platform does not send them.
    An empty string means no value on both platforms' APIs (`"resolutionSource": ""`, `"rules_primary": ""`),
    so optional text columns store it as null.
    """
    unknown = set(columns) - set(table.column_names)
    assert not unknown, f"{table.name} has no columns {sorted(unknown)}"
    checks = [value_reason(native.fields), *problems]
    built = native.frame.select(
        pl.coalesce(checks).alias(REASON),
        *(_column(c.name, c.dtype, c.required, columns, lineage) for c in table.columns),
    )
    unfilled = [p for c in table.columns for p in _unfilled(c.name, c.required, c.field, pl.col(c.name))]
    reasons = built.select(pl.coalesce(pl.col(REASON), *unfilled)).to_series()
    bad = reasons.is_not_null()
    rejected = [*native.rejected, *zip((native.kept[i] for i in bad.arg_true()), reasons.filter(bad), strict=True)]
    return Normalized(built.filter(~bad).drop(REASON), rejects_frame(rejected, lineage["_fetched_at"]))


def _unfilled(path: str, required: bool, field: Field | None, value: pl.Expr) -> list[pl.Expr]:
    """Per row, a required value a reader left null, at any depth (an outcome without a name): the rows must
    be valid for the schema whatever the reader derives, so this is the last check before they are kept."""
    found = [pl.when(value.is_null()).then(pl.lit(f"no value for required column '{path}'"))] if required else []
    children = field.children if field is not None else ()
    if field is not None and field.kind == "struct":
        found += [
            pl.when(value.is_not_null()).then(problem)
            for c in children
            for problem in _unfilled(f"{path}.{c.name}", c.required, c, value.struct.field(c.name))
        ]
    elif children:  # the items of an array, the entries of a map
        item = pl.element().struct
        inner = [
            problem for c in children for problem in _unfilled(f"{path}[].{c.name}", c.required, c, item.field(c.name))
        ]
        if inner:
            found.append(value.list.eval(pl.coalesce(inner)).list.drop_nulls().list.first())
    return found


def _column(
    name: str, dtype: pl.DataType, required: bool, columns: Mapping[str, pl.Expr], lineage: Mapping[str, Any]
) -> pl.Expr:
    if name not in columns:
        return pl.lit(lineage.get(name), dtype=dtype).alias(name)
    value = columns[name].cast(dtype)
    if isinstance(dtype, pl.String) and not required:
        value = pl.when(value != "").then(value)
    return value.alias(name)


NESTED_COUNT, NESTED_PROBLEM = "_nested_count", "_nested_problem"


def with_nested_count(native: Native, wire: str) -> Native:
    """The frame with NESTED_COUNT, the length of each record's nested array `wire` (an event's markets), and
    NESTED_PROBLEM, why it is no array. The items are other resources, read by their own reader, so only
    the array itself is checked here (in Python: a field of any-typed items has no place in `build`)."""
    values = native.values(wire)
    counts = [len(value) if type(value) is list else None for value in values]
    problems = [
        None if value is None or type(value) is list else f"field '{wire}': expected an array, got {shown(value)}"
        for value in values
    ]
    return native.with_columns(
        pl.Series(NESTED_COUNT, counts, dtype=pl.Float64()), pl.Series(NESTED_PROBLEM, problems, dtype=pl.String())
    )
