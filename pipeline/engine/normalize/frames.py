"""The building blocks shared by the normalisers: JSON records -> exactly typed polars frames -> rows or rejects.

`normalize.unified` reads the unified API's records with them, `normalize.polymarket` and `normalize.kalshi`
the platforms' own responses. A reader describes the records it expects as a tuple
of `pipeline.engine.schema.Field` (the unified reader uses a table's fields, the native readers their platform's), and
gets back the records whose JSON types are right, their frame, and the others with the reason.

Why the columns are built one by one after an exact check of JSON types: polars 2.1 does not type-check
Python objects, whatever `strict` says. `pl.DataFrame(records, schema=..., strict=True)` stores `True` as
1.0, the string "0.5" as 0.5, the number 7 as the string "7", and a 3-item list as a 3-field struct, all
without a word (pyarrow's `Table.from_pylist` also stores `True` as 1.0). A normaliser trusting it would
keep wrong values instead of rejecting them. So each column is pulled out of the records by C-level passes
(`map(dict.get, records, repeat(name))`), its JSON types are checked exactly (`set(map(type, values))`:
`bool` is not a number), and the polars column is built from that same list. No Python bytecode runs per
record on that path, except to stand `{}` in for the nulls of a column of objects or arrays that has some.
Free-form objects (a trade's `metadata`) become JSON text through `orjson.dumps` called by `map`: nothing in
polars writes a Python object back as the JSON it came from (an inferred struct plus `json_encode` would add
the keys other records have, reorder them, and turn 1 into 1.0).

If any value has the wrong JSON type, the batch takes the slow path: each record is diagnosed alone
(`_record_problem`), the wrong ones are rejected with the reason, and the others are built as above.
Problems of values rather than types (a required field missing or null, a time that does not parse) are
found on the built frame by polars expressions, with the reason of each row.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence, Sized
from dataclasses import dataclass, replace
from itertools import chain, repeat
from operator import is_
from typing import Any

import numpy as np
import orjson
import polars as pl
import pyarrow as pa

from pipeline.engine.normalised import Normalised
from pipeline.engine.schema import REJECTS_SCHEMA, Field, Source, Table
from pipeline.engine.wire_times import UNIX_SECONDS, parse_iso, parse_unix

_NONE = type(None)
_NO_FIELDS: dict[str, Any] = {}  # read in place of a null object, so that its fields read as null
_NO_ITEMS: tuple[()] = ()  # read in place of a null array
_MILLISECONDS_UP_TO = 1e14
_SHOWN_CHARS = 80  # of a bad value, in a reason
_BLOCK = 2048  # records built at a time (see build)


def utc(moment: dt.datetime) -> dt.datetime:
    """`moment` in UTC; a naive time is refused, because its zone is unknown."""
    if moment.tzinfo is None:
        raise ValueError(f"fetched_at must be timezone-aware, got {moment!r}")
    return moment.astimezone(dt.UTC)


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
    clipped = text if len(text) <= _SHOWN_CHARS else text[:_SHOWN_CHARS] + "..."
    return f"{type(value).__name__} {clipped}"


# -- problems of values, per row, in polars ----------------------------------------------------------------


def value_reason(fields: tuple[Field, ...]) -> pl.Expr:
    """Per row of a wire frame, why it cannot be kept (its first problem in field order), or null."""
    return pl.coalesce([p for field in fields for p in _problems(field, pl.col(field.name), field.wire)])


def _problems(field: Field, value: pl.Expr, path: str) -> list[pl.Expr]:
    """Expressions giving, per row, what is wrong with the value of `field`: a reason, or null."""
    found: list[pl.Expr] = []
    if field.required:
        found.append(pl.when(value.is_null()).then(pl.lit(f"missing required field '{path}'")))
    if field.kind == "timestamp":
        found.append(_unreadable_time(field, value, path))
    if field.kind == "scalar" and field.non_negative:  # a quantity: no check judges it, a negative one means nothing
        found.append(_negative(value, path))
    if field.kind == "struct":
        found += [pl.when(value.is_not_null()).then(p) for p in _child_problems(field, value, path)]
    if field.kind in ("list", "map") and field.children:
        item_path = f"{path}[]" if field.kind == "list" else f"{path}{{}}"
        in_items = _child_problems(field, pl.element(), item_path)
        if in_items:
            found.append(value.list.eval(pl.coalesce(in_items)).list.drop_nulls().list.first())
    return found


def _child_problems(field: Field, value: pl.Expr, path: str) -> list[pl.Expr]:
    return [p for c in field.children for p in _problems(c, value.struct.field(c.name), f"{path}.{c.wire}")]


def _unreadable_time(field: Field, value: pl.Expr, path: str) -> pl.Expr:
    if field.time_format == "iso":
        what, text = pl.lit("an ISO-8601 time with a UTC offset"), quoted(value)
    else:
        in_milliseconds = (value > UNIX_SECONDS[1]) & (value <= _MILLISECONDS_UP_TO)
        what = pl.when(in_milliseconds).then(pl.lit("a Unix time in seconds (in milliseconds?)"))
        what, text = what.otherwise(pl.lit("a Unix time")), value.cast(pl.String)
    unreadable = value.is_not_null() & _time(field, value).is_null()
    return pl.when(unreadable).then(pl.concat_str([pl.lit(f"field '{path}': not "), what, pl.lit(": "), text]))


def _negative(value: pl.Expr, path: str) -> pl.Expr:
    return pl.when(value < 0).then(pl.concat_str([pl.lit(f"field '{path}': negative: "), value.cast(pl.String)]))


def quoted(text: pl.Expr) -> pl.Expr:
    """A text value as a reason shows it: quoted, and cut to its first characters."""
    return pl.concat_str([pl.lit("'"), text.str.slice(0, _SHOWN_CHARS), pl.lit("'")])


def book_quote(price: pl.Expr) -> pl.Expr:
    """A best bid or ask, or null when that side of the book is empty. Both platforms write an empty side as a
    price no order can rest at: 0 for no bid, 0 or 1 for no ask (Kalshi quotes 1 to 99 cents, Polymarket's
    CLOB one tick above 0 to one below 1), so only a price strictly between 0 and 1 is a quote."""
    return pl.when((price > 0) & (price < 1)).then(price)


PRICE_DECIMALS = 6  # the finest a price is written in: Kalshi's fixed-point dollars, Polymarket's 6-decimal USDC


def exact_price(price: pl.Expr) -> pl.Expr:
    """A price as the platform wrote it, rid of binary float noise: Kalshi's cents over 100 (35 cents is
    0.35000000000000003 in polars) and Polymarket's Data API fill prices, the ratio of two 6-decimal amounts sent
    as a float (0.709999959 for 0.71), rounded to 6 decimals, the finest either platform prices in."""
    return price.round(PRICE_DECIMALS)


def _time(field: Field, value: pl.Expr) -> pl.Expr:
    """The UTC time a wire time stands for; null when it cannot be read."""
    return parse_iso(value) if field.time_format == "iso" else parse_unix(value)


# -- rows and rejects --------------------------------------------------------------------------------------


def rows(table: Table, frame: pl.DataFrame, lineage: Mapping[str, Any]) -> pl.DataFrame:
    """The table's columns in order: documented fields as stored, the others from the call's lineage."""
    return frame.select(
        stored(column.field, pl.col(column.name)).alias(column.name)
        if column.field is not None
        else pl.lit(lineage.get(column.name), dtype=column.dtype).alias(column.name)
        for column in table.columns
    )


def stored(field: Field, value: pl.Expr) -> pl.Expr:
    """The stored value of a wire value: times parsed, at any depth; everything else is stored as built."""
    if field.kind == "timestamp":
        return _time(field, value)
    timed = [c for c in field.children if _has_time(c)]
    if not timed:
        return value
    if field.kind == "struct":
        return _with_times(value, timed)
    return value.list.eval(_with_times(pl.element(), timed))  # items of an array, entries of a map


def _with_times(struct: pl.Expr, timed: list[Field]) -> pl.Expr:
    return struct.struct.with_fields([stored(c, struct.struct.field(c.name)).alias(c.name) for c in timed])


def _has_time(field: Field) -> bool:
    return field.kind == "timestamp" or any(_has_time(c) for c in field.children)


def rejects_frame(rejected: list[tuple[Any, str]], fetched_at: dt.datetime) -> pl.DataFrame:
    """The rejects of a call, each with its whole record as JSON text and the reason (REJECTS_SCHEMA)."""
    return pl.DataFrame(
        {
            "raw": [_raw(record) for record, _ in rejected],
            "reason": [reason for _, reason in rejected],
            "_fetched_at": [fetched_at] * len(rejected),
        },
        schema=REJECTS_SCHEMA,
    )


def _raw(record: Any) -> str:
    """The whole record as JSON text (repr() of what JSON cannot hold), so that a reject can be replayed."""
    try:
        return orjson.dumps(record, default=repr, option=orjson.OPT_NON_STR_KEYS).decode()
    except orjson.JSONEncodeError:  # an integer beyond 64 bits, a lone surrogate
        return repr(record)


# -- native platform responses -----------------------------------------------------------------------------
# A native reader (pipeline.engine.normalize.polymarket, .kalshi) describes its platform's records with the field
# constructors below, reads them with `read` (exact JSON types, as above), derives the table's columns from
# the checked frame with polars expressions, and hands both to `finish`.

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
) -> Normalised:
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
    return Normalised(built.filter(~bad).drop(REASON), rejects_frame(rejected, lineage["_fetched_at"]))


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
