"""Normalize the unified API's records (dicts, as orjson parsed them) into the warehouse tables, in polars.

Column names, types and required flags all come from `pipeline.engine.schema`; nothing here writes them down. The
records are read against their table's documented fields by the exact JSON-type builder of
`pipeline.engine.normalize.wire_frame` (whose docstring says why polars cannot be trusted to type-check them):
every record becomes a row of exactly the table's schema or a reject with the reason.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace
from itertools import islice
from typing import Any

import numpy as np
import polars as pl

from pipeline.engine.normalize.attribution import MARKET as MARKET_ID
from pipeline.engine.normalize.attribution import owned_by
from pipeline.engine.normalize.outcome_keys import keyed_by_outcome_id
from pipeline.engine.normalize.rows import rejects_frame, rows, utc, value_reason
from pipeline.engine.normalize.wire_frame import build
from pipeline.engine.normalized import Normalized
from pipeline.engine.schema import TABLES, Field, Table

NORMALIZE_CHUNK = 20_000  # raw records normalized at a time by normalized_chunks: bounds memory on busy days


def normalize(
    table: str,
    records: list[dict[str, Any]],
    *,
    platform: str,
    day: dt.date,
    source: str,
    fetched_at: dt.datetime,
    attributed: bool = False,
    asked_for: Sequence[str] | None = None,
) -> Normalized:
    """Turn records of the unified API into rows of `table`; every record becomes a row or a reject.

    Rows belong to the market they were asked for, whatever market id they carry
    (`pipeline.engine.normalize.attribution`), so with either of these a record's own market id is optional:
    `attributed`: the caller attributes the rows, which keep the id as sent in `market_id` for it to judge;
    `asked_for`: the market each record was asked for, one per record, which its row gets as `market_id`.

    Rows keep their own `platform` (a documented field); the partition's `platform`, like `day`, `source`
    and `fetched_at`, fills only the partition and lineage columns that the records do not document, so a
    record of another platform stays visible to the partition's checks instead of being relabelled.
    Unknown fields are ignored; values the checks judge (enums, NaN, negative prices) are kept as sent. A market's
    maps "from outcome key" are keyed by outcome id, whether the server keyed them by id or by name
    (`pipeline.engine.normalize.outcome_keys`).
    """
    spec = _table(table)
    fetched_at = utc(fetched_at)
    attributing = attributed or asked_for is not None
    fields = _market_id_optional(spec.fields) if attributing else spec.fields
    kept, frame, rejected = build(fields, records)
    reasons = frame.select(value_reason(fields)).to_series()
    bad = reasons.is_not_null()
    rejected += zip((kept[i] for i in bad.arg_true()), reasons.filter(bad), strict=True)
    lineage = {"platform": platform, "date": day, "_source": source, "_fetched_at": fetched_at}
    landed = rows(spec, frame.filter(~bad), lineage)
    if spec.name == "markets":
        landed = keyed_by_outcome_id(landed)
    if asked_for is not None:
        owners = pl.Series(MARKET_ID, asked_for, dtype=pl.String()).filter(_kept_mask(records, kept))
        landed = owned_by(landed, owners.filter(~bad))
    return Normalized(landed, rejects_frame(rejected, fetched_at))


def normalized_chunks(
    table: str,
    records: Iterable[dict[str, Any]],
    *,
    platform: str,
    day: dt.date,
    source: str,
    fetched_at: dt.datetime,
) -> Iterator[Normalized]:
    """A stream of records normalized ``NORMALIZE_CHUNK`` at a time (for a partition too large to hold)."""
    stream = iter(records)
    while chunk := list(islice(stream, NORMALIZE_CHUNK)):
        done = normalize(table, chunk, platform=platform, day=day, source=source, fetched_at=fetched_at)
        del chunk  # the raw records are most of the memory: let them go before the next chunk is read
        yield done


def _kept_mask(records: list[Any], kept: list[Any]) -> pl.Series:
    """Which of `records` are among `kept` (the same objects, in the same order)."""
    every = np.fromiter(map(id, records), dtype=np.int64, count=len(records))
    return pl.Series(np.isin(every, np.fromiter(map(id, kept), dtype=np.int64, count=len(kept))))


def _market_id_optional(fields: tuple[Field, ...]) -> tuple[Field, ...]:
    return tuple(replace(f, required=False) if f.name == "market_id" else f for f in fields)


def _table(name: str) -> Table:
    try:
        return TABLES[name]
    except KeyError:
        raise ValueError(f"unknown table {name!r}; expected one of {', '.join(TABLES)}") from None
