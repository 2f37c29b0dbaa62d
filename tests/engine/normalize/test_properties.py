"""Properties of the unified normalizer, for every table of `pipeline.engine.schema.TABLES`.

Records are drawn from the schema's fields (wire names, kinds, types, required flags, enums), never from a list
written here, so a field added to the schema is covered as soon as it exists:

- any record the spec allows becomes the row it describes (every value as sent, times in UTC), whatever the
  optional fields (absent, null or set), unknown extra fields, text (NULs, astral characters), numbers (huge,
  tiny, negative, 0, ints and floats) and times (`Z`, `+00:00`, other offsets, fractional seconds; Unix seconds);
- any record with one value the spec forbids (a number as text, a boolean for a number, a number for a text, a
  time in milliseconds where seconds are documented, a time without its offset, a negative size, a missing
  required field, an object or array of the wrong shape), or with a number no double can hold, is a reject
  whose reason names that field, and the other records of the batch are kept as they would be alone;
- every record of a batch is a row or a reject, exactly once, in order, on both the fast and the slow path and
  across blocks.

Values that the asset checks judge rather than the normalizer (`pipeline.engine.checks`: enums, prices outside [0, 1])
are part of what the spec allows here: they land as sent.

Deterministic (`derandomize`, no example database) and sized to run in seconds; set PMW_PROPERTY_EXAMPLES to
draw more examples locally.
"""

from __future__ import annotations

import copy
import datetime as dt
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from typing import Any
from unittest import mock

import orjson
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline.engine.normalize import wire_frame
from pipeline.engine.normalize.unified import normalize
from pipeline.engine.normalized import Normalized
from pipeline.engine.schema import OUTCOME_MAPS, TABLES, Field, Table
from tests.support.wire_contract import all_wire_fields

PROPERTIES = settings(
    max_examples=int(os.environ.get("PMW_PROPERTY_EXAMPLES", "25")),
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

DAY = dt.date(2026, 11, 21)
FETCHED_AT = dt.datetime(2026, 11, 22, 1, 2, 3, tzinfo=dt.UTC)
LINEAGE = {"platform": "polymarket", "date": DAY, "_source": "api", "_fetched_at": FETCHED_AT}
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
Record = dict[str, Any]


def run(table: str, records: list[Any]) -> Normalized:
    return normalize(table, records, platform="polymarket", day=DAY, source="api", fetched_at=FETCHED_AT)


# -- what the spec allows, drawn from the schema -----------------------------------------------------------------

# Text as orjson gives it: any Unicode scalar values (never a lone surrogate, which orjson refuses to parse),
# often the awkward ones.
AWKWARD = "\x00\x01\n\t\"\\'é漢\u2028\ufeff🙂\U0001d54f\U0010ffff"  # NUL, astral, last code point
TEXT = st.text(max_size=10) | st.text(st.sampled_from(AWKWARD), max_size=5)
IDS = st.one_of(
    st.integers(0, 10**12).map(str),  # the unified API's own ids (Polymarket's Gamma ids)
    st.binary(min_size=32, max_size=32).map(lambda b: "0x" + b.hex()),  # condition ids, transaction hashes
    st.integers(0, 2**256 - 1).map(str),  # CLOB token ids
    st.from_regex(r"KX[A-Z]{2,6}-\d{2}[A-Z]{3}\d{2}(-T\d{3,6})?", fullmatch=True),  # Kalshi tickers
    st.uuids().map(str),
    TEXT,
)
# The integers orjson can parse as integers (wider ones it reads as floats), and every finite float.
INTEGERS = st.integers(-(2**63), 2**64 - 1)
FLOATS = st.floats(allow_nan=False, allow_infinity=False)
TINY = (5e-324, -5e-324, 2.2250738585072014e-308, 1e-300)
HUGE = (1.7976931348623157e308, -1.7976931348623157e308, -1e300, 2**53 + 1, 2**63 - 1, -(2**63), 2**64 - 1)
EXTREMES = (0, 0.0, -0.0, 1, -1, *TINY, *HUGE)
NUMBERS = INTEGERS | FLOATS | st.sampled_from(EXTREMES)
QUANTITIES = (
    st.integers(0, 2**64 - 1)
    | st.floats(min_value=0.0, allow_infinity=False)
    | st.sampled_from([e for e in EXTREMES if e >= 0])
)
JSON_SCALARS = st.none() | st.booleans() | INTEGERS | FLOATS | TEXT
JSON_VALUES = st.recursive(
    JSON_SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3), max_leaves=6
)
JSON_OBJECTS = st.dictionaries(TEXT, JSON_VALUES, max_size=3)

# Times: Python's datetime is the oracle, so they stay within its years once moved to UTC.
MOMENTS = st.datetimes(min_value=dt.datetime(1, 1, 2), max_value=dt.datetime(9999, 12, 30))
FRACTIONS = st.text("0123456789", min_size=1, max_size=9).map(lambda digits: "." + digits)  # beyond us: truncated
OFFSETS = st.sampled_from(["Z", "+00:00", "-00:00"]) | st.integers(-(23 * 60 + 59), 23 * 60 + 59).map(
    lambda minutes: f"{'-' if minutes < 0 else '+'}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"
)
NAIVE_ISO = st.builds(
    lambda moment, fraction: moment.isoformat(timespec="seconds") + fraction, MOMENTS, st.just("") | FRACTIONS
)
ISO_TIMES = st.builds(str.__add__, NAIVE_ISO, OFFSETS)
# Unix seconds from year 1 to 1e11 (the year 5138), as integers or integral floats ("integer" in the spec).
UNIX_SECONDS = st.integers(-62_135_596_800 + 86_400, 10**11)
UNIX_TIMES = UNIX_SECONDS | UNIX_SECONDS.map(float)


def item(field: Field) -> Field:
    """What each item of an array, or each value of a map, is."""
    if field.children:
        return Field(field.wire, kind="struct", children=field.children)
    return Field(field.wire, dtype=field.dtype)


def is_id(field: Field) -> bool:
    return field.name == "id" or field.name.endswith("_id")


@cache
def values(field: Field) -> st.SearchStrategy[Any]:
    """Any value the spec allows for `field`, other than null."""
    if field.kind == "timestamp":
        return ISO_TIMES if field.time_format == "iso" else UNIX_TIMES
    if field.kind == "struct":
        return objects(field.children)
    if field.kind == "list":
        return st.lists(values(item(field)), max_size=3)
    if field.kind == "map":
        return st.dictionaries(IDS, values(item(field)), max_size=3)
    if field.kind == "json":
        return JSON_OBJECTS
    if isinstance(field.dtype, pl.Boolean):
        return st.booleans()
    if isinstance(field.dtype, pl.Float64):
        return QUANTITIES if field.non_negative else NUMBERS
    if field.enum:  # a value outside the enum lands too, for its check to flag
        return st.sampled_from([str(value) for value in field.enum]) | TEXT
    return IDS if is_id(field) else TEXT


def objects(fields: tuple[Field, ...], ignored: frozenset[str] = frozenset()) -> st.SearchStrategy[Record]:
    """Objects with `fields`: the required ones set, the others absent, null or set, plus unknown fields."""
    known = {f.wire for f in fields} | ignored
    required = {f.wire: values(f) for f in fields if f.required}
    optional = {f.wire: st.none() | values(f) for f in fields if not f.required}
    unknown = st.dictionaries(TEXT, JSON_VALUES, max_size=2).map(
        lambda extra: {name: value for name, value in extra.items() if name not in known}
    )
    return st.builds(
        lambda documented, extra: {**extra, **documented}, st.fixed_dictionaries(required, optional=optional), unknown
    )


@cache
def records(table: Table) -> st.SearchStrategy[Record]:
    return objects(table.fields, frozenset(f.wire for f in all_wire_fields(table)))


# -- the row a record describes ----------------------------------------------------------------------------------


def utc_of(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text).astimezone(dt.UTC)  # Python 3.11 reads `Z` and truncates beyond us


def stored(field: Field, value: Any) -> Any:
    """The value a row holds for a value the spec allows."""
    if value is None:
        return None
    if field.kind == "timestamp":
        return utc_of(value) if field.time_format == "iso" else EPOCH + dt.timedelta(seconds=value)
    if field.kind == "struct":
        return {c.name: stored(c, value.get(c.wire)) for c in field.children}
    if field.kind == "list":
        return [stored(item(field), v) for v in value]
    if field.kind == "map":
        if field.children:
            return [{"key": key, **stored(item(field), v)} for key, v in value.items()]
        return [{"key": key, "value": stored(item(field), v)} for key, v in value.items()]
    if field.kind == "json":
        return orjson.dumps(value).decode()
    return float(value) if isinstance(field.dtype, pl.Float64) else value


def expected_row(table: Table, record: Record) -> Record:
    """The table's columns in order: the record's fields as stored, the others from the call's lineage; a market's
    maps keyed by outcome id where a key names an outcome by its name alone."""
    row = {
        c.name: stored(c.field, record.get(c.field.wire)) if c.field is not None else LINEAGE.get(c.name)
        for c in table.columns
    }
    if table.name == "markets":
        outcomes = row["outcomes"] or []
        ids = {o["id"] for o in outcomes}
        names = [o["name"] for o in outcomes]
        by_name = {o["name"]: o["id"] for o in outcomes if names.count(o["name"]) == 1}
        for column in OUTCOME_MAPS:
            for entry in row[column] or []:
                if entry["key"] not in ids and entry["key"] in by_name:
                    entry["key"] = by_name[entry["key"]]
    return row


def as_raw(record: Any) -> str:
    """How a reject keeps its record: its JSON text, or its repr() when JSON cannot hold it."""
    try:
        return orjson.dumps(record).decode()
    except orjson.JSONEncodeError:
        return repr(record)


# -- what the spec forbids: one value of a good record made wrong ---------------------------------------------


@dataclass(frozen=True, repr=False)
class Slot:
    """A place in a record where a documented value is (or could be), with the path a reason names it by."""

    path: str  # `price`, `user.name`, `outcomes[]`, `outcomes[].id`, `current_prices{}.price`, `tags[]`
    container: Any
    key: Any
    field: Field

    def __repr__(self) -> str:  # as a failing example shows it
        return f"Slot({self.path!r})"


def slots(fields: tuple[Field, ...], obj: Record, prefix: str = "") -> Iterator[Slot]:
    for field in fields:
        path = prefix + field.wire
        yield Slot(path, obj, field.wire, field)
        value = obj.get(field.wire)
        if value is None:
            continue
        if field.kind == "struct":
            yield from slots(field.children, value, path + ".")
        elif field.kind in ("list", "map"):
            mark = "[]" if field.kind == "list" else "{}"
            for key in range(len(value)) if field.kind == "list" else list(value):
                yield Slot(path + mark, value, key, item(field))
                if field.children:
                    yield from slots(field.children, value[key], path + mark + ".")


DROP = object()  # a required field left out
NOT_OBJECTS = TEXT | NUMBERS | st.booleans() | st.lists(JSON_SCALARS, max_size=2)
NOT_ARRAYS = TEXT | NUMBERS | st.booleans() | JSON_OBJECTS
NOT_TEXTS = NUMBERS | st.booleans() | st.lists(TEXT, max_size=2) | JSON_OBJECTS
NOT_NUMBERS = NUMBERS.map(str) | st.booleans() | st.lists(NUMBERS, max_size=2) | JSON_OBJECTS  # "0.5", True
NOT_BOOLEANS = st.integers(0, 1) | st.sampled_from(["true", "false", "1", "yes"]) | st.just(0.0)
BEYOND_FLOAT64 = st.integers(2**1024, 2**1100) | st.integers(-(2**1100), -(2**1024))  # a JSON number all the same
NEGATIVE = st.integers(-(2**64), -1) | st.floats(max_value=-5e-324, allow_infinity=False)
MILLISECONDS = st.builds(
    lambda seconds, ms: seconds * 1000 + ms, st.integers(10**8 + 1, 4_102_444_800), st.integers(0, 999)
)  # from 1973 on: no seconds that are <= 1e11


@cache
def forbidden(field: Field) -> st.SearchStrategy[Any]:
    """Values the spec forbids for `field` (DROP: leave it out)."""
    options = [st.sampled_from([DROP, None])] if field.required else []
    if field.kind == "timestamp" and field.time_format == "iso":
        options += [UNIX_TIMES, NAIVE_ISO]  # a number; a time without its offset
    elif field.kind == "timestamp":
        options += [MILLISECONDS, ISO_TIMES, UNIX_SECONDS.map(str)]
    elif field.kind in ("struct", "map", "json"):
        options.append(NOT_OBJECTS)
    elif field.kind == "list":
        options.append(NOT_ARRAYS)
    elif isinstance(field.dtype, pl.Float64):
        options += [NOT_NUMBERS, BEYOND_FLOAT64] + ([NEGATIVE] if field.non_negative else [])
    elif isinstance(field.dtype, pl.Boolean):
        options.append(NOT_BOOLEANS)
    else:
        options.append(NOT_TEXTS)
    return st.one_of(options)


def reason_of(path: str, value: Any) -> str:
    """How the reason of a record with this forbidden value at `path` begins: it names the field."""
    return f"missing required field '{path}'" if value is DROP or value is None else f"field '{path}'"


def spoiled(draw: st.DrawFn, table: Table, record: Record) -> tuple[Record, str]:
    """A copy of `record` with one value, anywhere in it, made one the spec forbids; and how its reason begins."""
    bad = copy.deepcopy(record)
    slot = draw(st.sampled_from(list(slots(table.fields, bad))))
    value = draw(forbidden(slot.field))
    if value is DROP:
        del slot.container[slot.key]
    else:
        slot.container[slot.key] = value
    return bad, reason_of(slot.path, value)


Route = tuple[Field, ...]  # the fields from a record down to one of its documented values


def routes(fields: tuple[Field, ...], wanted: Callable[[Field], bool], above: Route = ()) -> Iterator[Route]:
    """The routes to every field, at any depth, that `wanted` picks."""
    for field in fields:
        if wanted(field):
            yield (*above, field)
        yield from routes(field.children, wanted, (*above, field))


def path_of(route: Route) -> str:
    marks = {"struct": ".", "list": "[].", "map": "{}."}
    return "".join(field.wire + marks[field.kind] for field in route[:-1]) + route[-1].wire


def present(field: Field) -> st.SearchStrategy[Any]:
    """A value of `field` with something inside: an object, or an array or a map of at least one item."""
    if field.kind == "list":
        return st.lists(values(item(field)), min_size=1, max_size=2)
    if field.kind == "map":
        return st.dictionaries(IDS, values(item(field)), min_size=1, max_size=2)
    return values(field)


def placed(draw: st.DrawFn, record: Record, route: Route, value: Any) -> Record:
    """A copy of `record` with `value` at the end of `route` (in the first item of an array or map on the way,
    given one if it has none); DROP leaves the field out."""
    copied = copy.deepcopy(record)
    container = copied
    for field in route[:-1]:
        inside = container.get(field.wire)
        if not inside:  # absent, null or empty: give it something to hold the value
            inside = container[field.wire] = draw(present(field))
        container = inside if field.kind == "struct" else inside[0 if field.kind == "list" else next(iter(inside))]
    if value is DROP:
        container.pop(route[-1].wire, None)
    else:
        container[route[-1].wire] = value
    return copied


NOT_RECORDS = TEXT | NUMBERS | st.booleans() | st.none() | st.lists(JSON_SCALARS, max_size=2)
NOT_A_RECORD = "record is not a JSON object"

# -- the properties --------------------------------------------------------------------------------------------

TABLE_NAMES = list(TABLES)


@pytest.mark.parametrize("table", TABLE_NAMES)
@PROPERTIES
@given(data=st.data())
def test_every_record_the_spec_allows_becomes_its_row(table: str, data: st.DataObject) -> None:
    spec = TABLES[table]
    batch = data.draw(st.lists(records(spec), min_size=1, max_size=3), label="records")
    result = run(table, batch)
    assert result.rejects["reason"].to_list() == []
    assert result.rows.schema == spec.polars_schema
    assert result.rows.rows(named=True) == [expected_row(spec, record) for record in batch]


def assert_accounted_for(table: str, batch: list[tuple[Any, str | None]], block: int = 2048) -> None:
    """`batch` holds each record with how its reason must begin (None: it must be a row). Every record must be
    its row (the good ones, in order) or a reject with such a reason, exactly once."""
    with mock.patch.object(wire_frame, "_BLOCK", block):
        result = run(table, [record for record, _ in batch])
    assert result.rows.height + result.rejects.height == len(batch)
    expected = {as_raw(r): why for r, why in batch if why is not None}
    rejects = dict(result.rejects.select("raw", "reason").iter_rows())
    landed = [raw for raw in expected if raw not in rejects]
    assert not landed, f"landed instead of rejected: {landed}"
    for raw, reason in rejects.items():
        assert raw in expected, f"rejected ({reason}): {raw}"
        assert reason.startswith(expected[raw]), f"{reason!r} does not start with {expected[raw]!r}: {raw}"
    assert sorted(result.rejects["raw"]) == sorted(as_raw(r) for r, why in batch if why is not None)
    assert result.rows.rows(named=True) == [expected_row(TABLES[table], r) for r, why in batch if why is None]
    assert result.rejects["_fetched_at"].to_list() == [FETCHED_AT] * result.rejects.height


@pytest.mark.parametrize("table", TABLE_NAMES)
@PROPERTIES
@given(data=st.data(), block=st.sampled_from([1, 2, 3, 2048]))
def test_a_value_the_spec_forbids_is_a_reject_naming_its_field(table: str, data: st.DataObject, block: int) -> None:
    """Good records, records with one forbidden value and things that are no records, in any order, across blocks
    of the builder (made tiny here): the good ones are their rows, every other one a reject with its reason."""
    spec = TABLES[table]
    good = data.draw(st.lists(records(spec), min_size=1, max_size=3), label="good")
    bases = data.draw(st.lists(st.sampled_from(good), max_size=3), label="spoiled")
    bad = [spoiled(data.draw, spec, record) for record in bases]
    junk = data.draw(st.lists(NOT_RECORDS, max_size=1), label="not records")
    tagged = [(r, None) for r in good] + bad + [(thing, NOT_A_RECORD) for thing in junk]
    assert_accounted_for(table, data.draw(st.permutations(tagged), label="batch"), block)


# Focused: each forbidden value that a lenient reader could take without a word, at every field of every table
# where it applies (found in the schema, at any depth), all in one batch.


def is_unix_time(field: Field) -> bool:
    return field.kind == "timestamp" and field.time_format == "unix_s"


FOCUSED: dict[str, tuple[Callable[[Field], bool], st.SearchStrategy[Any]]] = {
    "milliseconds where seconds are documented": (is_unix_time, MILLISECONDS),
    "a negative quantity": (lambda field: field.non_negative, NEGATIVE),
    "a missing required field": (lambda field: field.required, st.sampled_from([DROP, None])),
}


@pytest.mark.parametrize(
    ("table", "what"),
    [(t, what) for what, (wanted, _) in FOCUSED.items() for t in TABLES if any(routes(TABLES[t].fields, wanted))],
)
@settings(PROPERTIES, max_examples=max(PROPERTIES.max_examples // 2, 1))
@given(data=st.data())
def test_each_forbidden_value_is_a_reject_wherever_it_applies(table: str, what: str, data: st.DataObject) -> None:
    spec = TABLES[table]
    wanted, wrong = FOCUSED[what]
    good = data.draw(st.lists(records(spec), min_size=1, max_size=2), label="good")
    tagged: list[tuple[Any, str | None]] = [(r, None) for r in good]
    for route in routes(spec.fields, wanted):
        value = data.draw(wrong, label=path_of(route))
        tagged.append((placed(data.draw, good[0], route, value), reason_of(path_of(route), value)))
    assert_accounted_for(table, tagged)
