"""The catalogue's market listing read natively: most of a real catalogue's records ended long ago, and none of
those becomes a Python object.

A `/markets` page is read by pyarrow into the fields a listing reads of a record, as text (`liveness.SELECTION`),
strict on their JSON types; when every record of it surely ended before the listing's horizon (`surely_ended`:
times in the one form `YYYY-MM-DDTHH:MM:SSZ`, a sufficient condition of `liveness.ended_before`), its items are
their ids and event ids (`SkimmedMarkets`): counted, deduplicated and left out. Any other page (a record that may
be kept, a time in another form, a value of another type, an item that is no object, a body of another shape) is
read as JSON and judged record by record as before: what the skim cannot vouch for reaches the rule, and the
normalizer's rejects, as it always did.
"""

from __future__ import annotations

from collections.abc import Hashable
from datetime import UTC, date, datetime
from typing import Any

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.json as pa_json

from pipeline.engine.schema import MarketStatus
from pipeline.engine.sources.identities import SeenIds, field_keys, fingerprints
from pipeline.engine.sources.liveness import SELECTION, STATUS, SYNCED, ended_records
from pipeline.engine.sources.paging import Query, UnifiedCursor

ITEMS = "markets"
SKIM = pa.schema([
    (ITEMS, pa.list_(pa.struct([(name, pa.string()) for name in SELECTION]))),
    # what the walk and the listing's figures read of a page (paging.UnifiedCursor, service_figures)
    ("pagination", pa.struct([("total", pa.int64()), ("has_more", pa.bool_()), ("next_cursor", pa.string())])),
    ("meta", pa.struct([("cache_hit", pa.bool_()), ("data_freshness", pa.string())])),
])
OPEN = MarketStatus.OPEN.value.encode()  # the status `liveness` reads as open
CANONICAL = b"0000-00-00T00:00:00Z"  # the one form `surely_ended` reads: digits where this has zeros
_DIGITS = np.array([c == ord("0") for c in CANONICAL])
_SEPARATORS = np.frombuffer(CANONICAL, dtype=np.uint8)[~_DIGITS]
_DAYS_IN_MONTH = np.array([31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31])
_by_id = field_keys("id")
LEFT_OUT = 0  # the fingerprint of every record `liveness.ended_before` leaves out


class SkimmedMarkets:
    """A page's market records, every one of them surely ended before the listing's horizon (none is kept), as
    their ids and event ids."""

    def __init__(self, ids: pa.Array, event_ids: pa.Array) -> None:
        self.ids, self.event_ids = ids, event_ids

    def __len__(self) -> int:
        return len(self.ids)

    def chosen(self, chosen: list[bool]) -> SkimmedMarkets:
        if all(chosen):  # the usual page: every record new
            return self
        if not any(chosen):
            return SkimmedMarkets(self.ids.slice(0, 0), self.event_ids.slice(0, 0))
        mask = pa.array(chosen, type=pa.bool_())
        return SkimmedMarkets(self.ids.filter(mask), self.event_ids.filter(mask))


class MarketListing(UnifiedCursor):
    """The unified API's `/markets` paged whole for a catalogue keeping only what a day from `since` on may hold:
    pages of records that all surely ended before it skimmed (`skim`), any other read as JSON. A record is known
    by its id, and by its content's fingerprint while it may be kept: one that `liveness.ended_before` leaves out
    is met again as a repeat whatever else it then says (`LEFT_OUT`), unless it may now be kept."""

    def __init__(self, *arguments: Any, since: date, **options: Any) -> None:
        super().__init__(*arguments, keys=_identities, **options)
        self.since, self.seen = since, SeenIds(self.http.stats)

    def _get(self, query: Query) -> Any:
        return self.http.get_json(self.path, query, read=self._read)

    def _read(self, content: bytes) -> Any:
        return skim(content, self.since) or orjson.loads(content)

    def _items_key(self, body: Any) -> str:
        if isinstance(body, dict) and isinstance(body.get(ITEMS), SkimmedMarkets):
            return ITEMS
        return super()._items_key(body)

    def _fingerprints(self, items: Any) -> np.ndarray:
        if isinstance(items, SkimmedMarkets):
            return np.full(len(items), LEFT_OUT, dtype=np.int64)
        prints = fingerprints(items)
        prints[ended_records(items, self.since).to_numpy()] = LEFT_OUT
        return prints

    def _chosen(self, items: Any, chosen: list[bool]) -> Any:
        return items.chosen(chosen) if isinstance(items, SkimmedMarkets) else super()._chosen(items, chosen)


def _identities(items: Any) -> list[Hashable | None]:
    return items.ids.to_pylist() if isinstance(items, SkimmedMarkets) else _by_id(items)


def skim(content: bytes, since: date) -> dict[str, Any] | None:
    """The page as its `pagination` and `meta` and its items as `SkimmedMarkets`, when it is one JSON object
    whose fields selection reads have the JSON types the API gives (texts or null) and whose every item is an
    object that surely ended before `since`; else None (the page is read as JSON)."""
    options = pa_json.ReadOptions(use_threads=False, block_size=max(len(content), 1) + 1)
    parse = pa_json.ParseOptions(explicit_schema=SKIM, unexpected_field_behavior="ignore", newlines_in_values=True)
    try:
        table = pa_json.read_json(pa.BufferReader(content), read_options=options, parse_options=parse)
    except (pa.ArrowException, ValueError):  # another type, another shape, no JSON: read as JSON
        return None
    listed = table.column(ITEMS).combine_chunks()
    if table.num_rows != 1 or listed.null_count or table.column("pagination").null_count:
        return None
    records = listed.flatten()
    if records.null_count:  # an item that is null
        return None
    columns = dict(zip(SELECTION, records.flatten(), strict=True))
    if not surely_ended(columns, since).all():
        return None
    envelope = table.select(["pagination", "meta"]).to_pylist()[0]
    return {**envelope, ITEMS: SkimmedMarkets(columns["id"], columns["event_id"])}


def surely_ended(columns: dict[str, pa.Array], since: date) -> np.ndarray:
    """Per record (its `liveness.SELECTION` texts), whether it surely ended before `since`: what
    `liveness.ended_before` says, read only off times in the form `YYYY-MM-DDTHH:MM:SSZ` (a start or a creation,
    the end of trading, the resolution if any, the sync); a record with a time in any other form, or none, is
    not surely ended here (the rule itself then judges it)."""
    names = ("trading_start_at", "created_at", "trading_end_at", "resolved_at", SYNCED)
    valid, seconds = _canonical(pa.concat_arrays([columns[name] for name in names]))
    count = len(columns[SYNCED])
    (start, created, end, resolved, synced), at = valid.reshape(len(names), count), seconds.reshape(len(names), count)
    unresolved = ~_present(columns["resolved_at"])
    stop = np.where(resolved, np.minimum(at[2], at[3]), at[2])
    horizon = int(datetime.combine(since, datetime.min.time(), UTC).timestamp())
    said_open, is_open = _texts_of_width(columns[STATUS], len(OPEN))
    is_open &= (said_open == np.frombuffer(OPEN, dtype=np.uint8)).all(axis=1)
    return ((start | created) & end & (resolved | unresolved) & synced & (stop <= horizon) & (at[4] >= stop)
            & ~is_open)


def _canonical(texts: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """Per text, whether it is a moment written `YYYY-MM-DDTHH:MM:SSZ` (a year from 1000, a day its month has,
    hours to 23, seconds to 59), and its Unix seconds (meaningless where it is not)."""
    chars, whole = _texts_of_width(texts, len(CANONICAL))
    digits = chars - np.uint8(ord("0"))  # wraps below "0": a non-digit is above 9
    shaped = whole & (digits[:, _DIGITS] <= 9).all(axis=1) & (chars[:, ~_DIGITS] == _SEPARATORS).all(axis=1)

    def number(first: int, width: int) -> np.ndarray:
        value = digits[:, first].astype(np.int64)
        for place in range(first + 1, first + width):
            value = value * 10 + digits[:, place]
        return value

    year, month, day = number(0, 4), number(5, 2), number(8, 2)
    hour, minute, second = number(11, 2), number(14, 2), number(17, 2)
    month_ok = (month >= 1) & (month <= 12)
    leap = (year % 4 == 0) & ((year % 100 != 0) | (year % 400 == 0))
    days_in_month = _DAYS_IN_MONTH[np.where(month_ok, month - 1, 0)] + ((month == 2) & leap)
    valid = shaped & (year >= 1000) & month_ok & (day >= 1) & (day <= days_in_month) & (hour <= 23) & (
        minute <= 59) & (second <= 59)
    return valid, _days_from_civil(year, month, day) * 86_400 + hour * 3_600 + minute * 60 + second


def _texts_of_width(texts: pa.Array, width: int) -> tuple[np.ndarray, np.ndarray]:
    """The bytes of each text `width` bytes long, a row each (zeros for the others), and which texts are."""
    count = len(texts)
    offsets = np.frombuffer(texts.buffers()[1], dtype=np.int32)[texts.offset:texts.offset + count + 1]
    fits = (np.diff(offsets) == width) & _present(texts)
    chars = np.zeros((count, width), dtype=np.uint8)
    if fits.any():
        chars[fits] = np.frombuffer(texts.buffers()[2], dtype=np.uint8)[offsets[:-1][fits, None] + np.arange(width)]
    return chars, fits


def _present(values: pa.Array) -> np.ndarray:
    """Which values are not null, read off the array's validity bitmap."""
    bitmap = values.buffers()[0]
    if bitmap is None:
        return np.ones(len(values), dtype=bool)
    bits = np.unpackbits(np.frombuffer(bitmap, dtype=np.uint8), bitorder="little")
    return bits[values.offset:values.offset + len(values)].astype(bool)


def _days_from_civil(year: np.ndarray, month: np.ndarray, day: np.ndarray) -> np.ndarray:
    """Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm)."""
    year = year - (month <= 2)
    era = year // 400
    of_era = year - era * 400
    of_year = (153 * (month + np.where(month > 2, -3, 9)) + 2) // 5 + day - 1
    return era * 146_097 + of_era * 365 + of_era // 4 - of_era // 100 + of_year - 719_468
