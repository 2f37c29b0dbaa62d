"""Landing a stream of raw records too long to hold in memory (a busy day's trades) as one lake partition.

Records arrive normalised a chunk at a time and the day's rows go to the lake's batch writer in
the file's order (market, then time, then id), so memory holds a chunk of records and a bounded part of
one market, never the partition.

The order comes from the source: it reads one market after another in id order, so a market's rows are
complete as soon as the next market's rows show up. Within a market, trades come newest first, so its rows
are held until the market is complete and then sorted; a market with more than ``HELD_ROWS`` rows is set
aside on disk in sorted runs instead, which, having come newest first, are in file order read back last
first (see :class:`_Market`).

Checks see every row: the row checks run on each batch and are added up; the unique key, whose duplicates
may lie far apart in a large market, is checked on an 8-byte hash of every row's key, and only the rows
whose hash repeats are read back from the written file to be compared exactly.
"""

from __future__ import annotations

import gc
import io
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import IO, Any

import polars as pl

from pipeline.checks import CHECKS, PREVIEW_ROWS, Check, CheckOutcome, PartitionContext
from pipeline.lake import PARTITION_COLUMNS, REJECTS_SCHEMA, Lake, PartitionWrite, sort_position
from pipeline.normalize.frames import Normalised
from pipeline.schema import TABLES, Table

BATCH_ROWS = 25_000  # rows handed to the checks and the writer at a time
HELD_ROWS = 100_000  # rows of one market kept in memory; beyond, they wait on disk in sorted runs
MARKET = "market_id"  # the column the stream arrives grouped by, first in the sort key of streamed tables
UNIQUE_KEY_CHECK = "unique_key"
GC_THRESHOLDS = (100_000, 10, 10)  # Python's are (700, 10, 10): see cyclic_gc_per_chunk


@dataclass(frozen=True)
class StreamLanding:
    """What landed, the partition's check outcomes, and its first rows (for a preview)."""

    written: PartitionWrite
    outcomes: list[CheckOutcome]
    head: pl.DataFrame


def land_stream(
    lake: Lake,
    table: str,
    platform: str,
    day: date,
    chunks: Iterable[Normalised],
    *,
    market_ids: frozenset[str],
) -> StreamLanding:
    """Check and write normalised chunks as the (table, platform, day) partition, a market at a time.

    The chunks' rows must come market by market in id order (the order the sources ask for them); rows
    outside the day are dropped (trades of later days come along on a market's first page). A stream out
    of market order raises ValueError and leaves the previous partition intact.
    """
    spec = TABLES[table]
    if spec.sort_key[0] != MARKET:
        raise ValueError(f"table {table} is not sorted by {MARKET} first: it cannot be landed as a stream")
    tally = _Tally(spec, PartitionContext(platform, day, market_ids))
    rejects: list[pl.DataFrame] = [pl.DataFrame(schema=REJECTS_SCHEMA)]
    with cyclic_gc_per_chunk():
        rows = _day_rows(spec, chunks, day, rejects)
        batches = tally.watch(_sliced(_in_file_order(spec, rows, spill_dir=lake.root)))
        written = lake.write_partition_batches(table, platform, day, batches, lambda: pl.concat(rejects))
        outcomes = tally.outcomes(lake.read_partition_batches(table, platform, day))
    return StreamLanding(written, outcomes, tally.head)


@contextmanager
def cyclic_gc_per_chunk() -> Iterator[None]:
    """Run Python's cyclic garbage collector once a chunk, on what the stream made, instead of on its own.

    A chunk is hundreds of thousands of small dicts, lists and strings, parsed a page at a time, and at the
    default thresholds the collector goes through them again and again, in vain (JSON is a tree): parsing
    is 1.5 times faster without that (benchmarks/README.md). It cannot simply be switched off: every request
    leaves a little cyclic garbage (httpx's request and response, tenacity's retry state) that keeps the
    page it fetched alive until the collector frees it. So while the stream runs, the collector is left
    to its thresholds only rarely (``GC_THRESHOLDS``) and :func:`_day_rows` collects after each chunk;
    the heap from before the stream is frozen, so that those collections go through the new objects only.
    """
    previous = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)
    try:
        yield
    finally:
        gc.set_threshold(*previous)
        gc.unfreeze()


def _day_rows(
    spec: Table, chunks: Iterable[Normalised], day: date, rejects: list[pl.DataFrame]
) -> Iterator[pl.DataFrame]:
    """The day's rows, a normalised chunk at a time, in arrival order; each chunk's rejects go to ``rejects``."""
    start = datetime.combine(day, datetime.min.time(), UTC)
    inside_day = pl.col(str(spec.time_column)).is_between(start, start + timedelta(days=1), closed="left")
    for done in chunks:
        gc.collect()  # the pages that requests' cyclic garbage still holds (see cyclic_gc_per_chunk)
        rejects.append(done.rejects)
        yield done.rows.filter(inside_day)


def _in_file_order(spec: Table, chunks: Iterable[pl.DataFrame], spill_dir: Path) -> Iterator[pl.DataFrame]:
    """Batches in the file's order: the markets of a chunk as soon as they are complete, each sorted."""
    market: _Market | None = None
    for chunk in chunks:
        if chunk.is_empty():
            continue
        ids = chunk[MARKET]
        if not ids.is_sorted() or (market is not None and ids[0] < market.id):
            raise ValueError(
                f"rows of market {ids[0]!r} arrived out of order (after {market.id if market else ids[0]!r}): "
                "a stream must come market by market in id order"
            )
        continuing = int(ids.search_sorted(market.id, side="right")) if market is not None else 0
        if market is not None and continuing:
            market.add(chunk.head(continuing))
        rest = chunk.slice(continuing)
        if rest.is_empty():
            continue
        if market is not None:
            yield from market.in_file_order()
        last = rest[MARKET][-1]
        whole = int(rest[MARKET].search_sorted(last, side="left"))  # the markets before the last are complete
        if whole:
            yield rest.head(whole).sort(spec.sort_key, nulls_last=True)
        market = _Market(spec, last, spill_dir)
        market.add(rest.slice(whole))
    if market is not None:
        yield from market.in_file_order()


def _sliced(batches: Iterable[pl.DataFrame]) -> Iterator[pl.DataFrame]:
    """The batches cut to at most BATCH_ROWS rows: the checks and the writer copy what they are given
    (sorted, as Arrow), so a large market's rows reach them a slice at a time."""
    for batch in batches:
        yield from batch.iter_slices(BATCH_ROWS)


class _Market:
    """The rows of one market as they arrive, handed back in the file's order once the market is complete.

    Up to HELD_ROWS rows are held in memory and sorted at the end. A market that grows past that is set
    aside on disk instead, piece by piece as its rows arrive, each piece sorted into a run, except the rows
    of its oldest second, which wait for the next piece (it may hold more trades of that second, which
    sort by id among them). Trades come newest first, so each run sorts wholly before the one before it,
    and reading the runs back last first, one at a time, gives the market in file order while memory holds
    a piece. A source that does not page newest first still lands right: its runs are then read back and
    sorted together in memory.
    """

    def __init__(self, spec: Table, market_id: str, spill_dir: Path) -> None:
        self.spec, self.id, self.spill_dir = spec, market_id, spill_dir
        self.held: list[pl.DataFrame] = []  # before any run: the rows so far; after: the oldest second's
        self.held_rows = 0
        self.runs: _Runs | None = None  # set aside on disk once the market outgrows HELD_ROWS

    def add(self, rows: pl.DataFrame) -> None:
        self.held.append(rows)
        self.held_rows += rows.height
        if self.runs is None and self.held_rows <= HELD_ROWS:
            return
        if self.runs is None:
            self.runs = _Runs(self.spec, self.spill_dir)
        pieces, self.held = self.held, []
        for piece in pieces:
            self._set_aside(piece)

    def in_file_order(self) -> Iterator[pl.DataFrame]:
        rest = pl.concat(self.held).sort(self.spec.sort_key, nulls_last=True)
        if self.runs is None:
            yield rest
            return
        with self.runs:
            if self.runs.newest_first and (rest.is_empty() or sort_position(self.spec, rest, -1) < self.runs.first):
                yield rest
                yield from self.runs.last_first()
            else:
                yield pl.concat([rest, *self.runs.last_first()]).sort(self.spec.sort_key, nulls_last=True)

    def _set_aside(self, piece: pl.DataFrame) -> None:
        assert self.runs is not None
        rows = pl.concat([*self.held, piece]).sort(self.spec.sort_key, nulls_last=True)
        oldest_second = _leading_ties(self.spec, rows)
        self.held = [_compacted(rows.head(oldest_second))]
        self.held_rows = oldest_second
        self.runs.append(rows.slice(oldest_second))


class _Runs:
    """Sorted runs of one market in an anonymous temporary file (gone once closed, or if the process dies),
    next to the lake so that they take disk, not the memory a tmpfs /tmp would."""

    def __init__(self, spec: Table, directory: Path) -> None:
        self.spec = spec
        self.file: IO[bytes] = tempfile.TemporaryFile(dir=directory)  # noqa: SIM115 (closed on exit)
        self.spans: list[tuple[int, int]] = []  # where each run's IPC stream lies in the file
        self.first: tuple[Any, ...] = ()  # the smallest key of the last run
        self.newest_first = True  # every run so far sorts wholly before the one before it

    def __enter__(self) -> _Runs:
        return self

    def __exit__(self, *exc: object) -> None:
        self.file.close()

    def append(self, run: pl.DataFrame) -> None:
        if run.is_empty():
            return
        if self.spans and not sort_position(self.spec, run, -1) < self.first:
            self.newest_first = False
        self.first = sort_position(self.spec, run, 0)
        start = self.file.tell()
        run.write_ipc_stream(self.file, compression="uncompressed")  # 2x faster than lz4, and read back soon
        self.spans.append((start, self.file.tell() - start))

    def last_first(self) -> Iterator[pl.DataFrame]:
        for start, length in reversed(self.spans):
            self.file.seek(start)
            yield pl.read_ipc_stream(io.BytesIO(self.file.read(length)))


def _compacted(rows: pl.DataFrame) -> pl.DataFrame:
    """A copy of a few rows that no longer keeps the frame they were cut from alive.

    polars keeps text as views into shared buffers: a slice, filter or sort references all the text of
    the frame it came from. Rows kept for long (the oldest second of a run, carried to the next one,
    again and again) would otherwise keep every earlier run's text in memory.
    """
    return pl.DataFrame(pl.from_arrow(rows.to_arrow()))


def _leading_ties(spec: Table, rows: pl.DataFrame) -> int:
    """How many rows of a sorted frame share the first row's sort key but for its last, tie-breaking column."""
    prefix = spec.sort_key[:-1]
    first = rows.select(prefix).row(0, named=True)
    return int(rows.select(pl.all_horizontal(pl.col(c).eq_missing(first[c]) for c in prefix).sum()).item())


class _Tally:
    """The partition's checks over a stream: row checks added up batch by batch, the unique key by hash."""

    def __init__(self, spec: Table, context: PartitionContext) -> None:
        self.context = context
        self.head = pl.DataFrame(schema=spec.polars_schema)
        self.checks = CHECKS[spec.name]
        self.totals = {check.name: _outcome(check, self.head, context) for check in self.checks}
        key = [c for c in spec.primary_key if c not in PARTITION_COLUMNS]  # the partition's are constant
        self.key_hash = pl.struct(key).hash(seed=0)
        self.hashes: list[pl.Series] = [pl.Series(dtype=pl.UInt64())]

    def watch(self, batches: Iterable[pl.DataFrame]) -> Iterator[pl.DataFrame]:
        """The batches, unchanged, each checked on its way to the writer."""
        for batch in batches:
            for check in self.checks:
                if check.name != UNIQUE_KEY_CHECK:
                    self.totals[check.name] = _added(self.totals[check.name], _outcome(check, batch, self.context))
            self.hashes.append(batch.select(self.key_hash).to_series())
            if self.head.height < PREVIEW_ROWS:
                self.head = _compacted(pl.concat([self.head, batch.head(PREVIEW_ROWS - self.head.height)]))
            yield batch

    def outcomes(self, landed: Iterable[pl.DataFrame]) -> list[CheckOutcome]:
        """Every check's outcome, in the registry's order; ``landed`` is read only if two keys share a hash."""
        unique = next(check for check in self.checks if check.name == UNIQUE_KEY_CHECK)
        self.totals[unique.name] = _outcome(unique, self._rows_sharing_a_hash(landed), self.context)
        return [self.totals[check.name] for check in self.checks]

    def _rows_sharing_a_hash(self, landed: Iterable[pl.DataFrame]) -> pl.DataFrame:
        """The landed rows whose key hash repeats: the only rows that can share a key."""
        hashes = pl.concat(self.hashes).sort()  # sorted, a repeated hash sits next to itself: no hash table
        repeated = hashes.filter(hashes == hashes.shift(1)).unique()
        if repeated.is_empty():
            return self.head.clear()
        return pl.concat(
            [self.head.clear(), *(rows.filter(self.key_hash.is_in(repeated.implode())) for rows in landed)]
        )


def _outcome(check: Check, rows: pl.DataFrame, context: PartitionContext) -> CheckOutcome:
    bad = check.run(rows, context)
    return CheckOutcome(check.name, bad.height == 0, bad.height, check.description, bad.head(PREVIEW_ROWS).to_dicts())


def _added(total: CheckOutcome, more: CheckOutcome) -> CheckOutcome:
    return replace(
        total,
        passed=total.passed and more.passed,
        violations=total.violations + more.violations,
        examples=(total.examples + more.examples)[:PREVIEW_ROWS],
    )
