"""JSON records -> exactly typed polars frames (the wire frame), or rejects with the reason of a wrong JSON type.

Every normalizer reads its records through it: a reader gives the `pipeline.engine.schema.Field`s it expects and
gets back the records whose JSON types are right, their frame, and the others with the reason. Columns are built
one by one after an exact type check because polars does not type-check Python objects, whatever `strict` says:
docs/design.md, "Exact JSON types".
"""

from __future__ import annotations

from collections.abc import Iterable, Sized
from dataclasses import dataclass
from itertools import chain, repeat
from operator import is_
from typing import Any

import numpy as np
import orjson
import polars as pl
import pyarrow as pa

from pipeline.engine.schema import Field

_NONE = type(None)
_NO_FIELDS: dict[str, Any] = {}  # read in place of a null object, so that its fields read as null
_NO_ITEMS: tuple[()] = ()  # read in place of a null array
SHOWN_CHARS = 80  # of a bad value, in a reason
_BLOCK = 2048  # records built at a time (see build)


# -- JSON types ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _JsonType:
    """The Python types that orjson gives one kind of JSON value, and how a reason names that kind."""

    types: frozenset[type]
    label: str


_STRING = _JsonType(frozenset({str}), "a string")
_NUMBER = _JsonType(frozenset({int, float}), "a number")
_BOOLEAN = _JsonType(frozenset({bool}), "a boolean")
_OBJECT = _JsonType(frozenset({dict}), "an object")
_ARRAY = _JsonType(frozenset({list}), "an array")
_ISO_TIME = _JsonType(_STRING.types, "an ISO-8601 time (a string)")
_UNIX_TIME = _JsonType(_NUMBER.types, "a Unix time (a number)")
_OF_DTYPE: dict[type[pl.DataType], _JsonType] = {pl.String: _STRING, pl.Float64: _NUMBER, pl.Boolean: _BOOLEAN}


def _json_type(field: Field) -> _JsonType:
    if field.kind in ("struct", "map", "json"):
        return _OBJECT
    if field.kind == "list":
        return _ARRAY
    if field.kind == "timestamp":
        return _ISO_TIME if field.time_format == "iso" else _UNIX_TIME
    return _OF_DTYPE[type(field.dtype)]


def _wire_dtype(field: Field) -> pl.DataType:
    """The polars type of a scalar as sent: times stay text or numbers until they are parsed."""
    if field.kind == "timestamp":
        return pl.String() if field.time_format == "iso" else pl.Float64()
    assert field.dtype is not None, f"scalar field {field.wire} has no dtype"
    return field.dtype


def _item(field: Field) -> Field:
    """What each item of an array field, or each value of a map field, is."""
    if field.children:
        return Field(field.wire, kind="struct", children=field.children)
    return Field(field.wire, dtype=field.dtype)


# -- the wire frame: exact JSON types, built column by column ----------------------------------------------


class _WrongType(Exception):
    """A value of the batch does not have its documented JSON type: records must be diagnosed one by one."""


def build(fields: tuple[Field, ...], records: list[Any]) -> tuple[list[Any], pl.DataFrame, list[tuple[Any, str]]]:
    """The records whose JSON types are right, their wire frame (row i is record i), and the others with why.

    Built a block of records at a time: each field is pulled by its own pass over the records, and within a
    block the records are still in the CPU cache from the previous field's pass (1.7x faster at 200k). A
    wrong type sends only its block to the record-by-record diagnosis.
    """
    kept: list[Any] = []
    frames: list[pl.DataFrame] = []
    rejected: list[tuple[Any, str]] = []
    for start in range(0, max(len(records), 1), _BLOCK):
        block = records[start : start + _BLOCK]
        try:
            frames.append(_wire_frame(fields, block))
        except _WrongType:
            block, wrong = _diagnosed(fields, block)
            frames.append(_wire_frame(fields, block))
            rejected += wrong
        kept += block
    return kept, pl.concat(frames), rejected


def _diagnosed(fields: tuple[Field, ...], records: list[Any]) -> tuple[list[Any], list[tuple[Any, str]]]:
    """The records without a wrong JSON type, and the others with the reason."""
    verdicts = [(record, _record_problem(fields, record)) for record in records]
    right = [record for record, problem in verdicts if problem is None]
    return right, [(record, problem) for record, problem in verdicts if problem is not None]


def _wire_frame(fields: tuple[Field, ...], records: list[Any]) -> pl.DataFrame:
    """The fields of the records as columns: warehouse names and types, times not yet parsed."""
    if not set(map(type, records)) <= _OBJECT.types:
        raise _WrongType
    return pl.DataFrame(_columns(fields, records))


def _columns(fields: Iterable[Field], objects: list[dict[str, Any]]) -> list[pl.Series]:
    """One column per field of `objects` (records or nested objects), each pulled out in one C-level pass."""
    return [_series(field, list(map(dict.get, objects, repeat(field.wire)))) for field in fields]


def _series(field: Field, values: list[Any]) -> pl.Series:
    """The column of `field` from its values as sent; raise _WrongType if one has the wrong JSON type."""
    if field.kind in ("scalar", "timestamp"):
        return _scalar_series(field, values)
    has_null = _check_types(values, _json_type(field))
    if field.kind == "struct":
        return _struct_series(field, values, has_null)
    if field.kind == "list":
        return _list_series(field, values, has_null)
    if field.kind == "map":
        return _map_series(field, values, has_null)
    return _json_series(field.name, values, has_null)


def _check_types(values: list[Any], expected: _JsonType) -> bool:
    """Raise _WrongType unless every value is null or of the expected JSON type; say whether one is null."""
    types = set(map(type, values))
    if not types <= expected.types | {_NONE}:
        raise _WrongType
    return _NONE in types


def _scalar_series(field: Field, values: list[Any]) -> pl.Series:
    """A flat `pl.Series(..., strict=True)` refuses any value but a str in a String column and any but a
    bool in a Boolean one (tests pin this), but stores True as 1.0 in a Float64 one: numbers are checked."""
    dtype = _wire_dtype(field)
    if isinstance(dtype, pl.Float64):
        _check_types(values, _NUMBER)
    try:
        return pl.Series(field.name, values, dtype=dtype, strict=True)
    except (TypeError, OverflowError, UnicodeEncodeError) as error:  # a wrong type, a huge int, a surrogate
        raise _WrongType from error


def _struct_series(field: Field, values: list[Any], has_null: bool) -> pl.Series:
    objects = _filled(values, _NO_FIELDS) if has_null else values
    struct = pl.DataFrame(_columns(field.children, objects)).to_struct(field.name)
    if not has_null:
        return struct
    return pl.select(pl.when(_not_null_mask(values)).then(struct)).to_series()


def _list_series(field: Field, values: list[Any], has_null: bool) -> pl.Series:
    lists = _filled(values, _NO_ITEMS) if has_null else values
    items = list(chain.from_iterable(lists))
    if field.children:  # a null item reads as an object without fields: its required fields are then missing
        item_column = _object_columns(field.children, items)
        item_series = pl.DataFrame(item_column).to_struct(field.name)
    else:
        item_series = _series(_item(field), items)
    return _nested(field.name, lists, item_series, values if has_null else None)


def _map_series(field: Field, values: list[Any], has_null: bool) -> pl.Series:
    """A map as the list of its entries, in the object's key order: the key, then the value's fields."""
    maps = _filled(values, _NO_FIELDS) if has_null else values
    key_name, value_name = _entry_names(field)
    keys = _scalar_series(Field(key_name, dtype=pl.String()), list(chain.from_iterable(maps)))
    entries = list(chain.from_iterable(map(dict.values, maps)))
    if field.children:
        value_columns = _object_columns(field.children, entries)
    else:
        value_columns = [_series(Field(value_name, dtype=field.dtype), entries)]
    entry_series = pl.DataFrame([keys, *value_columns]).to_struct(field.name)
    return _nested(field.name, maps, entry_series, values if has_null else None)


def _entry_names(field: Field) -> tuple[str, str]:
    """The names the schema gives a map entry's key and, for a map of scalars, its value."""
    dtype = field.polars_dtype
    assert isinstance(dtype, pl.List) and isinstance(dtype.inner, pl.Struct), f"{field.wire} is no map"
    names = [f.name for f in dtype.inner.fields]
    return names[0], names[1]


def _object_columns(children: tuple[Field, ...], values: list[Any]) -> list[pl.Series]:
    """The children's columns of a column of objects (array items, map values): a null reads as `{}`."""
    has_null = _check_types(values, _OBJECT)
    return _columns(children, _filled(values, _NO_FIELDS) if has_null else values)


def _json_series(name: str, values: list[Any], has_null: bool) -> pl.Series:
    """Each object as its compact JSON text (null stays null). Both passes are C-level, and each bytes
    object is freed as soon as it is decoded: keeping 200k of them alive first is ten times slower."""
    try:
        texts = pl.Series(name, list(map(bytes.decode, map(orjson.dumps, values))), dtype=pl.String())
    except orjson.JSONEncodeError as error:
        raise _WrongType from error
    if not has_null:
        return texts
    return pl.select(pl.when(texts != "null").then(texts)).to_series()  # no object is written "null"


def _filled(values: list[Any], empty: Any) -> list[Any]:
    """The values with nulls replaced, so that C-level passes over them (len, dict.get) do not fail."""
    return [empty if value is None else value for value in values]


def _not_null_mask(values: list[Any]) -> pl.Series:
    return ~pl.Series(list(map(is_, values, repeat(None))), dtype=pl.Boolean())


def _nested(name: str, containers: list[Sized], items: pl.Series, values: list[Any] | None) -> pl.Series:
    """A list column from every row's item count and all rows' items in a row: null where `values` is None."""
    counts = np.fromiter(map(len, containers), dtype=np.int64, count=len(containers))
    # The offsets and the mask go to Arrow through polars: pyarrow's own `pa.array` imports pandas, when installed,
    # on its first call in a process (half a second, in every run's process).
    offsets = pl.Series(np.concatenate(([0], np.cumsum(counts)))).to_arrow()
    mask = None if values is None else pl.Series(list(map(is_, values, repeat(None))), dtype=pl.Boolean()).to_arrow()
    return pl.Series(name, pa.LargeListArray.from_arrays(offsets, items.to_arrow(), mask=mask))


# -- the slow path: why a record has a wrong JSON type --------------------------------------------------


def _record_problem(fields: tuple[Field, ...], record: Any) -> str | None:
    """Why the record cannot be read as `fields` because of a JSON type, or None if it can."""
    if type(record) not in _OBJECT.types:
        return f"record is not a JSON object: got {shown(record)}"
    return _first(_value_problem(field, record.get(field.wire), field.wire) for field in fields)


def _value_problem(field: Field, value: Any, path: str) -> str | None:
    """Why `value` cannot be stored as `field` (the same rules as `_series`, one value at a time), or None."""
    if value is None:
        return None
    expected = _json_type(field)
    if not _admits(expected, value):
        return f"field '{path}': expected {expected.label}, got {shown(value)}"
    if field.kind == "struct":
        return _first(_value_problem(c, value.get(c.wire), f"{path}.{c.wire}") for c in field.children)
    if field.kind == "list":
        return _first(_value_problem(_item(field), item, f"{path}[]") for item in value)
    if field.kind == "map":
        keys = (_value_problem(Field(path, dtype=pl.String()), key, f"{path} key") for key in value)
        entries = (_value_problem(_item(field), entry, f"{path}{{}}") for entry in value.values())
        return _first(chain(keys, entries))
    if field.kind == "json":
        return _json_problem(value, path)
    return _scalar_problem(value, path)


def _admits(expected: _JsonType, value: Any) -> bool:
    """The builder's test: exact types, except that polars (which checks strings) takes str subclasses."""
    return type(value) in expected.types or (str in expected.types and isinstance(value, str))


def _json_problem(value: Any, path: str) -> str | None:
    try:
        orjson.dumps(value)
    except orjson.JSONEncodeError as error:
        return f"field '{path}': not writable as JSON: {error}"
    return None


def _scalar_problem(value: Any, path: str) -> str | None:
    """What polars cannot store although the JSON type is right: an integer beyond float64, a lone surrogate."""
    try:
        if type(value) is int:
            float(value)
        elif type(value) is str:
            value.encode()
    except OverflowError:
        return f"field '{path}': number out of range: {shown(value)}"
    except UnicodeEncodeError:
        return f"field '{path}': not valid Unicode text: {shown(value)}"
    return None


def _first(problems: Iterable[str | None]) -> str | None:
    return next((problem for problem in problems if problem is not None), None)


def shown(value: Any) -> str:
    """A bad value as a reason names it: its type and its first characters."""
    if value is None:
        return "null"
    text = repr(value)
    clipped = text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS] + "..."
    return f"{type(value).__name__} {clipped}"

