"""Landing a stream of raw records too long to hold in memory (a busy day's trades) as one lake partition.

Normalized chunks go to the lake's batch writer in the file's order (market, then time, then id), each market
held until a `MarketsDone` says it is complete, spilled to disk past ``HELD_ROWS``; the checks see every row.
Memory holds a chunk and a bounded part of the markets still arriving, never the partition. How, in
docs/design.md, "Streaming writes".
"""

from __future__ import annotations

import gc
import io
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import IO, Any

import polars as pl

from pipeline.engine.checks import CHECKS, PREVIEW_ROWS, CheckOutcome, PartitionContext, outcome
from pipeline.engine.garbage_collection import cyclic_gc_per_chunk
from pipeline.engine.lake.layout import PARTITION_COLUMNS
from pipeline.engine.lake.parquet_files import sort_position
from pipeline.engine.lake.store import Lake
from pipeline.engine.lake.writes import Approve, PartitionWrite
from pipeline.engine.normalized import MarketsDone, Normalized
from pipeline.engine.reconciliation import LANDED_SCHEMA, landed_per_market
from pipeline.engine.schema import REJECTS_SCHEMA, TABLES, Table

BATCH_ROWS = 25_000  # rows handed to the checks and the writer at a time
HELD_ROWS = 100_000  # rows of one market kept in memory; beyond, they wait on disk in sorted runs
MARKET = "market_id"  # the first column of the sort key of streamed tables
TIME_ORDER = "timestamp"  # the column pages of a market come ordered by
UNIQUE_KEY_CHECK = "unique_key"


@dataclass(frozen=True)
class StreamLanding:
    """What landed, the partition's check outcomes (but the reconciliations), its first rows (for a preview),
    and what landed per market (`LANDED_SCHEMA`, for the reconciliation checks)."""

    written: PartitionWrite
    outcomes: list[CheckOutcome]
    head: pl.DataFrame
    per_market: pl.DataFrame


def land_stream(
    lake: Lake,
    table: str,
    platform: str,
    day: date,
    stream: Iterable[Normalized | MarketsDone],
    *,
    market_ids: frozenset[str],
    approve: Approve | None = None,
) -> StreamLanding:
    """Check and write a stream of normalized chunks as the (table, platform, day) partition.

    Rows may arrive in any order; `MarketsDone` items let complete markets go out early (see the module's
    docstring). Rows outside the day are dropped (trades of later days come along on a market's first page).
    Rows of a market the stream already declared complete are a broken promise of the source: ValueError,
    and the previous partition stays intact, as when `approve` (see `Lake.write_partition_batches`) refuses it.
    """
    spec = TABLES[table]
    if spec.sort_key[0] != MARKET:
        raise ValueError(f"table {table} is not sorted by {MARKET} first: it cannot be landed as a stream")
    tally = _Tally(spec, PartitionContext(platform, day, market_ids))
    rejects: list[pl.DataFrame] = [pl.DataFrame(schema=REJECTS_SCHEMA)]
    with cyclic_gc_per_chunk(), _SpillFile(lake.root) as spill:
        items = _day_rows(spec, stream, day, rejects)
        batches = tally.watch(_sliced(_in_file_order(spec, items, spill)))
        written = lake.write_partition_batches(table, platform, day, batches, lambda: pl.concat(rejects), approve)
        outcomes = tally.outcomes(lake.read_partition_batches(table, platform, day), pl.concat(rejects))
    return StreamLanding(written, outcomes, tally.head, tally.per_market())


def _day_rows(
    spec: Table, stream: Iterable[Normalized | MarketsDone], day: date, rejects: list[pl.DataFrame]
) -> Iterator[pl.DataFrame | MarketsDone]:
    """The day's rows, a normalized chunk at a time, in arrival order, and the stream's `MarketsDone` items;
    each chunk's rejects go to ``rejects``."""
    start = datetime.combine(day, datetime.min.time(), UTC)
    inside_day = pl.col(str(spec.time_column)).is_between(start, start + timedelta(days=1), closed="left")
    for item in stream:
        if isinstance(item, MarketsDone):
            yield item
            continue
        gc.collect()  # the pages that requests' cyclic garbage still holds (see cyclic_gc_per_chunk)
        rejects.append(item.rejects)
        yield item.rows.filter(inside_day)


def _in_file_order(
    spec: Table, items: Iterable[pl.DataFrame | MarketsDone], spill: _SpillFile
) -> Iterator[pl.DataFrame]:
    """Batches in the file's order: each market sorted, as soon as it and every market before it is complete."""
    waiting = _Waiting(spec, spill)
    for item in items:
        if isinstance(item, MarketsDone):
            yield from waiting.complete_through(item.through)
        else:
            waiting.add(item)
    yield from waiting.complete_through(None)


class _Waiting:
    """The markets whose rows are arriving, held until complete, within a memory budget of HELD_ROWS rows."""

    def __init__(self, spec: Table, spill: _SpillFile) -> None:
        self.spec, self.spill = spec, spill
        self.markets: dict[str, _Market] = {}
        self.done: str | None = None  # every market whose id sorts at or before this one is complete

    def add(self, rows: pl.DataFrame) -> None:
        if rows.is_empty():
            return
        for market_id, part in _by_market(rows):
            if self.done is not None and market_id <= self.done:
                raise ValueError(
                    f"rows of market {market_id!r} arrived after the stream said every market up to "
                    f"{self.done!r} was complete"
                )
            market = self.markets.get(market_id)
            if market is None:
                market = self.markets[market_id] = _Market(self.spec, market_id, self.spill)
            market.add(part)
        self._within_budget()

    def complete_through(self, through: str | None) -> Iterator[pl.DataFrame]:
        """The markets up to ``through`` (all of them, for None), in id order, each in file order. Markets held
        wholly in memory go together, sorted at once in batches of at least BATCH_ROWS rows: the key starts with
        the market, so one sort of many markets is each market's sort, and a sort (like a check or a write)
        costs per call, which thousands of small markets (a day's price history) would pay each."""
        together: list[pl.DataFrame] = []
        rows = 0
        for market_id in sorted(m for m in self.markets if through is None or m <= through):
            market = self.markets.pop(market_id)
            if market.runs.spans:
                if together:
                    yield self._sorted(together)
                    together, rows = [], 0
                yield from market.in_file_order()
                continue
            together += market.held
            rows += market.held_rows
            if rows >= BATCH_ROWS:
                yield self._sorted(together)
                together, rows = [], 0
        if together:
            yield self._sorted(together)
        if through is not None and (self.done is None or through > self.done):
            self.done = through

    def _sorted(self, frames: list[pl.DataFrame]) -> pl.DataFrame:
        return pl.concat(frames).sort(self.spec.sort_key, nulls_last=True)

    def _within_budget(self) -> None:
        """Set the markets holding the most rows aside on disk until the held rows fit HELD_ROWS."""
        held = sum(m.held_rows for m in self.markets.values())
        while held > HELD_ROWS:
            largest = max(self.markets.values(), key=lambda m: m.held_rows)
            released = largest.set_aside()
            if not released:  # the rows left all share one second: they wait for the next rows
                return
            held -= released


def _sliced(batches: Iterable[pl.DataFrame]) -> Iterator[pl.DataFrame]:
    """The batches cut to at most BATCH_ROWS rows: the checks and the writer copy what they are given
    (sorted, as Arrow), so a large market's rows reach them a slice at a time."""
    for batch in batches:
        yield from batch.iter_slices(BATCH_ROWS)


def _by_market(rows: pl.DataFrame) -> Iterator[tuple[str, pl.DataFrame]]:
    """The rows of each market, in order of arrival. When the chunk's markets come one after the other (the usual
    case: one market's pages, or a price-history call's markets in id order), each market's rows are a slice of
    the chunk, not a copy (copying them cost a sixth of the time to land a day of price history)."""
    ids = rows[MARKET]
    if ids.is_sorted() and ids.null_count() == 0:
        starts = (ids != ids.shift(1)).fill_null(True).arg_true()
        ends = [*starts.to_list()[1:], rows.height]
        for market_id, start, end in zip(ids.gather(starts).to_list(), starts.to_list(), ends, strict=True):
            yield market_id, rows.slice(start, end - start)
        return
    # Not `as_dict=True`: polars then reads each part's key with a query of its own, thousands per chunk of prices.
    parts = rows.partition_by(MARKET, maintain_order=True)
    yield from zip(ids.unique(maintain_order=True).to_list(), parts, strict=True)


class _Market:
    """The rows of one market as they arrive, handed back in the file's order once the market is complete.

    Rows are held in memory until the budget of :class:`_Waiting` runs out; then they are set aside on disk
    as a sorted run, except the rows of the second at the run's edge that the next rows may share (they sort
    by id among them), which wait for the next run. Pages come in time order, newest first or oldest first
    (which one, the rows already held say), so each run sorts wholly before (or after) the one before it, and
    reading the runs back in key order, one at a time, gives the market in file order while memory holds a
    run. Rows in no time order still land right: the runs are then read back and sorted together in memory.
    """

    def __init__(self, spec: Table, market_id: str, spill: _SpillFile) -> None:
        self.spec, self.id = spec, market_id
        self.held: list[pl.DataFrame] = []  # before any run: the rows so far; after: those since, and the edge's
        self.held_rows = 0
        self.runs = _Runs(spec, spill)

    def add(self, rows: pl.DataFrame) -> None:
        self.held.append(rows)
        self.held_rows += rows.height

    def set_aside(self) -> int:
        """Write the held rows as runs, piece by piece as they arrived, but for the edge second's; return how
        many rows left memory."""
        if self.runs.direction == 0:
            self.runs.direction = _arrival_direction(self.held)
        pieces, self.held = self.held, []
        kept: pl.DataFrame | None = None
        released = 0
        while pieces:
            piece = pieces.pop(0)
            rows = (piece if kept is None else pl.concat([kept, piece])).sort(self.spec.sort_key, nulls_last=True)
            edge = _leading_ties(self.spec, rows) if self.runs.direction < 0 else _trailing_ties(self.spec, rows)
            if self.runs.direction < 0:
                kept, run = rows.head(edge), rows.slice(edge)
            else:
                kept, run = rows.tail(edge), rows.head(rows.height - edge)
            if not run.is_empty():
                self.runs.append(run)
                released += run.height
        assert kept is not None
        self.held, self.held_rows = [_compacted(kept)], kept.height
        return released

    def in_file_order(self) -> Iterator[pl.DataFrame]:
        rest = pl.concat(self.held).sort(self.spec.sort_key, nulls_last=True)
        self.held = []
        if not self.runs.spans:
            yield rest
        elif self.runs.in_order and self.runs.direction < 0 and (
                rest.is_empty() or sort_position(self.spec, rest, -1) < self.runs.lowest):
            yield rest
            yield from self.runs.in_key_order()
        elif self.runs.in_order and self.runs.direction > 0 and (
                rest.is_empty() or sort_position(self.spec, rest, 0) > self.runs.highest):
            yield from self.runs.in_key_order()
            yield rest
        else:
            yield pl.concat([rest, *self.runs.in_key_order()]).sort(self.spec.sort_key, nulls_last=True)


def _arrival_direction(pieces: list[pl.DataFrame]) -> int:
    """-1 if the rows came newest first (the first piece's first row is later than the last's last), else 1."""
    time = pl.col(TIME_ORDER)
    first, last = pieces[0].select(time.first()).item(), pieces[-1].select(time.last()).item()
    return -1 if first is None or last is None or first >= last else 1


class _SpillFile:
    """One anonymous temporary file for the runs of every market of a stream (gone once closed, or if the
    process dies), next to the lake so that runs take disk, not the memory a tmpfs /tmp would; opened only
    if a run is written."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.file: IO[bytes] | None = None

    def __enter__(self) -> _SpillFile:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.file is not None:
            self.file.close()

    def write(self, run: pl.DataFrame) -> tuple[int, int]:
        if self.file is None:
            self.directory.mkdir(parents=True, exist_ok=True)
            self.file = tempfile.TemporaryFile(dir=self.directory)  # noqa: SIM115 (closed on exit)
        start = self.file.seek(0, io.SEEK_END)
        run.write_ipc_stream(self.file, compression="uncompressed")  # 2x faster than lz4, and read back soon
        return start, self.file.tell() - start

    def read(self, span: tuple[int, int]) -> pl.DataFrame:
        assert self.file is not None
        self.file.seek(span[0])
        return pl.read_ipc_stream(io.BytesIO(self.file.read(span[1])))


class _Runs:
    """One market's sorted runs in the spill file, and whether each sorts wholly beyond the one before it."""

    def __init__(self, spec: Table, spill: _SpillFile) -> None:
        self.spec, self.spill = spec, spill
        self.spans: list[tuple[int, int]] = []  # where each run lies in the file, in the order written
        self.direction = 0  # -1: each run sorts before the one before it (newest first); 1: after; 0: not known
        self.in_order = True  # every run so far sorts wholly beyond the one before it, in `direction`
        self.lowest: tuple[Any, ...] = ()  # the smallest key of the runs, if in order
        self.highest: tuple[Any, ...] = ()  # the largest

    def append(self, run: pl.DataFrame) -> None:
        low, high = sort_position(self.spec, run, 0), sort_position(self.spec, run, -1)
        if self.spans:
            beyond = high < self.lowest if self.direction < 0 else low > self.highest
            self.in_order = self.in_order and beyond
            self.lowest, self.highest = min(low, self.lowest), max(high, self.highest)
        else:
            self.lowest, self.highest = low, high
        self.spans.append(self.spill.write(run))

    def in_key_order(self) -> Iterator[pl.DataFrame]:
        for span in reversed(self.spans) if self.direction < 0 else self.spans:
            yield self.spill.read(span)


def _compacted(rows: pl.DataFrame) -> pl.DataFrame:
    """A copy of a few rows that no longer keeps the frame they were cut from alive.

    polars keeps text as views into shared buffers: a slice, filter or sort references all the text of
    the frame it came from. Rows kept for long (the oldest second of a run, carried to the next one,
    again and again) would otherwise keep every earlier run's text in memory.
    """
    return pl.DataFrame(pl.from_arrow(rows.to_arrow()))


def _leading_ties(spec: Table, rows: pl.DataFrame) -> int:
    """How many rows of a sorted frame share the first row's sort key but for its last, tie-breaking column."""
    return _ties(spec, rows, 0)


def _trailing_ties(spec: Table, rows: pl.DataFrame) -> int:
    """How many rows of a sorted frame share the last row's sort key but for its last, tie-breaking column."""
    return _ties(spec, rows, -1)


def _ties(spec: Table, rows: pl.DataFrame, index: int) -> int:
    prefix = spec.sort_key[:-1]
    edge = rows.select(prefix).row(index, named=True)
    return int(rows.select(pl.all_horizontal(pl.col(c).eq_missing(edge[c]) for c in prefix).sum()).item())


class _Tally:
    """The partition's checks over a stream: row checks added up batch by batch, the unique key by hash, the
    checks of rejects on them all at the end."""

    def __init__(self, spec: Table, context: PartitionContext) -> None:
        self.context = context
        self.head = pl.DataFrame(schema=spec.polars_schema)
        self.checks = [c for c in CHECKS[spec.name] if not c.reconciles]
        self.row_checks = [c for c in self.checks if not c.reads_rejects and c.name != UNIQUE_KEY_CHECK]
        self.totals = {check.name: outcome(check, self.head, context) for check in self.row_checks}
        key = [c for c in spec.primary_key if c not in PARTITION_COLUMNS]  # the partition's are constant
        self.key_hash = pl.struct(key).hash(seed=0)
        self.hashes: list[pl.Series] = [pl.Series(dtype=pl.UInt64())]
        self.markets: list[pl.DataFrame] = [pl.DataFrame(schema=LANDED_SCHEMA)]

    def watch(self, batches: Iterable[pl.DataFrame]) -> Iterator[pl.DataFrame]:
        """The batches, unchanged, each checked on its way to the writer."""
        for batch in batches:
            for check in self.row_checks:
                self.totals[check.name] = _added(self.totals[check.name], outcome(check, batch, self.context))
            self.hashes.append(batch.select(self.key_hash).to_series())
            self.markets.append(landed_per_market(batch))
            if self.head.height < PREVIEW_ROWS:
                self.head = _compacted(pl.concat([self.head, batch.head(PREVIEW_ROWS - self.head.height)]))
            yield batch

    def outcomes(self, landed: Iterable[pl.DataFrame], rejects: pl.DataFrame) -> list[CheckOutcome]:
        """Every check's outcome, in the registry's order; ``landed`` is read only if two keys share a hash."""
        for check in self.checks:
            if check.reads_rejects:
                self.totals[check.name] = outcome(check, rejects, self.context)
            elif check.name == UNIQUE_KEY_CHECK:
                self.totals[check.name] = outcome(check, self._rows_sharing_a_hash(landed), self.context)
        return [self.totals[check.name] for check in self.checks]

    def per_market(self) -> pl.DataFrame:
        """Rows, size and notional (price x size) landed per market, over every batch."""
        return pl.concat(self.markets).group_by(MARKET).agg(pl.col("rows").sum(), pl.col("size", "notional").sum())

    def _rows_sharing_a_hash(self, landed: Iterable[pl.DataFrame]) -> pl.DataFrame:
        """The landed rows whose key hash repeats: the only rows that can share a key."""
        hashes = pl.concat(self.hashes).sort()  # sorted, a repeated hash sits next to itself: no hash table
        repeated = hashes.filter(hashes == hashes.shift(1)).unique()
        if repeated.is_empty():
            return self.head.clear()
        return pl.concat(
            [self.head.clear(), *(rows.filter(self.key_hash.is_in(repeated.implode())) for rows in landed)]
        )


def _added(total: CheckOutcome, more: CheckOutcome) -> CheckOutcome:
    return replace(
        total,
        passed=total.passed and more.passed,
        violations=total.violations + more.violations,
        examples=(total.examples + more.examples)[:PREVIEW_ROWS],
    )
