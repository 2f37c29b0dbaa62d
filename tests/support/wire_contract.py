"""Checks a JSON record against the documented fields in pipeline/engine/schema/ (the wire contract)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import polars as pl

from pipeline.engine.schema import Field, Table


def all_wire_fields(table: Table) -> tuple[Field, ...]:
    """The table's documented fields, including those sent on the wire but not stored (nested resources)."""
    return (*table.fields, *table.wire_only)


def wire_names(fields: tuple[Field, ...]) -> set[str]:
    return {f.wire for f in fields}


def _check_scalar(value: Any, field: Field, path: str, dtype: pl.DataType | None = None) -> None:
    dtype = dtype if dtype is not None else field.dtype
    if isinstance(dtype, pl.String):
        assert isinstance(value, str), f"{path}: expected a string, got {value!r}"
    elif isinstance(dtype, pl.Boolean):
        assert isinstance(value, bool), f"{path}: expected a boolean, got {value!r}"
    elif isinstance(dtype, pl.Float64 | pl.Int64):
        is_number = isinstance(value, int | float) and not isinstance(value, bool)
        assert is_number, f"{path}: expected a number, got {value!r}"
    else:
        raise AssertionError(f"{path}: no check for {dtype}")
    if field.enum is not None:
        assert value in field.enum, f"{path}: {value!r} is not one of {field.enum}"


def check_value(value: Any, field: Field, path: str) -> None:
    if value is None:
        assert field.nullable, f"{path}: null, but the field is not nullable"
        return
    if field.kind == "timestamp":
        if field.time_format == "iso":
            assert isinstance(value, str), f"{path}: expected an ISO timestamp, got {value!r}"
            assert datetime.fromisoformat(value).tzinfo is not None, f"{path}: {value!r} has no time zone"
        else:
            assert isinstance(value, int) and not isinstance(value, bool), f"{path}: expected Unix seconds"
    elif field.kind == "json":
        assert isinstance(value, dict), f"{path}: expected an object, got {value!r}"
    elif field.kind == "struct":
        check_record(value, field.children, path)
    elif field.kind == "list":
        assert isinstance(value, list), f"{path}: expected an array, got {value!r}"
        for i, item in enumerate(value):
            if field.children:
                check_record(item, field.children, f"{path}[{i}]")
            else:
                _check_scalar(item, field, f"{path}[{i}]")
    elif field.kind == "map":
        assert isinstance(value, dict), f"{path}: expected an object, got {value!r}"
        for key, item in value.items():
            if field.children:
                check_record(item, field.children, f"{path}.{key}")
            else:
                _check_scalar(item, field, f"{path}.{key}")
    else:
        _check_scalar(value, field, path)


def check_record(
    record: Any,
    fields: tuple[Field, ...],
    path: str = "record",
    allow_unknown: bool = False,
    skip: tuple[str, ...] = (),
) -> None:
    """Every key documented, every required key present, every value of the documented type."""
    assert isinstance(record, dict), f"{path}: expected an object, got {record!r}"
    by_wire = {f.wire: f for f in fields}
    unknown = set(record) - set(by_wire) - set(skip)
    assert allow_unknown or not unknown, f"{path}: undocumented fields {sorted(unknown)}"
    missing = {f.wire for f in fields if f.required} - set(record)
    assert not missing, f"{path}: required fields missing {sorted(missing)}"
    for key, value in record.items():
        if key in by_wire and key not in skip:
            check_value(value, by_wire[key], f"{path}.{key}")
