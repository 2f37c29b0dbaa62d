"""A window of consecutive days of one platform, read in one sweep and landed day by day.

The first run to need a table's rows sweeps the window once (under a file lock) and spools the normalized rows to
disk by day (`Settings.windows_dir`); each (table, platform, day) partition lands its day from the spool, exactly
what a run of its day alone lands. A process that lands a window's days itself (`pmw backfill`) owns its spools while
it runs; once it is gone they are removed at the next start. The spool's rules: docs/design.md, "The window spool".
"""

from __future__ import annotations

import gc
import hashlib
import io
import shutil
import time
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import IO

import orjson
import polars as pl
from filelock import FileLock, Timeout

from pipeline.engine.config import MAX_WINDOW_DAYS, Settings
from pipeline.engine.files import replaced_atomically
from pipeline.engine.garbage_collection import cyclic_gc_per_chunk
from pipeline.engine.locks import held
from pipeline.engine.normalize.partitions.protocol import WindowSource
from pipeline.engine.normalized import MarketsDone, Normalized
from pipeline.engine.schema import REJECTS_SCHEMA, TABLES
from pipeline.engine.sources.coverage import Coverage
from pipeline.engine.wire_times import parse_iso, parse_unix

WINDOW_TABLES = ("trades", "price_history")  # the tables read per market, which a window sweeps
SPOOL_TTL_S = 86_400.0
OWNER = ".owner"  # `<token's hash><OWNER>`: the lock its owner holds while it lands the token's windows
MANIFEST = "manifest.json"
ROWS = "rows.arrow"
MARKET = "market_id"


@dataclass(frozen=True)
class Window:
    """Consecutive days landed together, and the token that names one landing of them (a backfill, a tick)."""

    first: date
    last: date
    token: str

    def __post_init__(self) -> None:
        if self.last < self.first:
            raise ValueError(f"a window ends ({self.last}) before it starts ({self.first})")

    @property
    def days(self) -> list[date]:
        return [self.first + timedelta(days=n) for n in range((self.last - self.first).days + 1)]

    def covers(self, day: date) -> bool:
        return self.first <= day <= self.last

    @property
    def tag(self) -> str:
        """The window as a run tag's value: `2026-11-14..2026-11-20@token`."""
        return f"{self.first}..{self.last}@{self.token}"

    @classmethod
    def parse(cls, tag: str) -> Window:
        span, _, token = tag.partition("@")
        first, _, last = span.partition("..")
        try:
            return cls(date.fromisoformat(first), date.fromisoformat(last), token)
        except ValueError:
            raise ValueError(f"not a window tag (first..last@token): {tag!r}") from None


def windows_of(days: Iterable[date], token: str, max_days: int = MAX_WINDOW_DAYS) -> list[Window]:
    """The days as windows: each run of consecutive days one window, cut at `max_days` days."""
    windows: list[Window] = []
    for day in sorted(set(days)):
        current = windows[-1] if windows else None
        if current and day == current.last + timedelta(days=1) and (day - current.first).days < max_days:
            windows[-1] = Window(current.first, day, token)
        else:
            windows.append(Window(day, day, token))
    return windows


class WindowSweeps:
    """The spools of the windows being landed, under one directory."""

    def __init__(self, root: Path, lock_timeout_s: float = Settings.lock_timeout_s) -> None:
        self.root, self.lock_timeout_s = root, lock_timeout_s

    def day_stream(self, source: WindowSource, table: str, window: Window, day: date, markets: pl.DataFrame,
                   coverage: Coverage) -> Iterator[Normalized | MarketsDone]:
        """The partition's rows as a run of the day alone would stream them, read from the window's sweep
        (swept now if no run of the window has yet); `coverage` gets the markets whose day the sweep could
        not read to its start."""
        if table not in WINDOW_TABLES or not window.covers(day):
            raise ValueError(f"{table} {day} is not landed from the window {window.tag}")
        spool = self._spool(source, table, window, markets)
        asked = source.asked(table, markets, day)
        day_start = datetime.combine(day, datetime.min.time(), UTC)
        reached = {market: datetime.fromisoformat(moment) for market, moment in spool.incomplete.items()}
        coverage.incomplete.update({m: moment for m, moment in reached.items() if m in asked and moment > day_start})
        uncovered = markets.filter(pl.col("id").is_in(sorted(asked - spool.swept)))
        if uncovered.height:  # listed for the day but not swept: read for the day alone, ahead of the rest
            alone = source.trades if table == "trades" else source.price_history
            yield from (item for item in alone(day, uncovered) if not isinstance(item, MarketsDone))
            ids = set(uncovered["id"].to_list())
            coverage.incomplete.update({m: t for m, t in source.coverage().incomplete.items() if m in ids})
        yield from spool.replay(day, asked)
        with self._lock(spool.directory):
            spool.served(day, window)

    @contextmanager
    def owning(self, token: str) -> Iterator[None]:
        """The spools of the windows named `token` are this process's while the block runs (it holds their owner's
        lock, which the system lets go when the process dies, however it dies) and are removed when it ends."""
        self.root.mkdir(parents=True, exist_ok=True)
        owner = self.root / f"{token_digest(token)}{OWNER}"
        with held(owner, f"the spools of the windows {token}", self.lock_timeout_s):
            try:
                yield
            finally:
                self._remove_spools(owner)

    def _remove_spools(self, owner: Path) -> list[str]:
        """Remove the spools of the owner's windows, then the owner's file; their names."""
        spools = sorted(self.root.glob(f"*_{owner.name.removesuffix(OWNER)}"))
        for spool in spools:
            shutil.rmtree(spool, ignore_errors=True)
        owner.unlink(missing_ok=True)
        return [spool.name for spool in spools]

    def remove_dead(self) -> list[str]:
        """Remove the spools whose owner is gone (a `pmw backfill` killed before its windows were served), however
        fresh, and return their names; a spool whose owner runs, or which has none, is left."""
        removed: list[str] = []
        for owner in sorted(self.root.glob(f"*{OWNER}")) if self.root.exists() else []:
            lock = FileLock(str(owner), timeout=0)
            try:
                lock.acquire()
            except Timeout:  # held: its owner runs
                continue
            try:
                removed += self._remove_spools(owner)
            finally:
                lock.release()
        return removed

    def _directory(self, table: str, platform: str, window: Window) -> Path:
        return self.root / f"{platform}_{window.first}_{window.last}_{token_digest(window.token)}" / table

    def _lock(self, directory: Path) -> AbstractContextManager[None]:
        directory.parent.mkdir(parents=True, exist_ok=True)
        return held(str(directory) + ".lock", f"the window spool {directory.parent.name}/{directory.name}",
                    self.lock_timeout_s)

    def _spool(self, source: WindowSource, table: str, window: Window,
               markets: pl.DataFrame) -> _Spool:
        directory = self._directory(table, source.platform, window)
        with self._lock(directory):
            if (directory / MANIFEST).exists():
                return _Spool.load(directory)
            self._remove_stale()
            self.remove_dead()
            shutil.rmtree(directory, ignore_errors=True)  # a sweep cut short
            swept = _window_markets(source, window, markets)
            sweep = (source.window_trades if table == "trades" else source.window_price_history)(
                window.first, window.last, swept)
            spool = _Spool.record(directory, table, window, sweep, set(swept["id"].to_list()))
            return spool.completed(source.coverage())

    def _remove_stale(self) -> None:
        if not self.root.exists():
            return
        oldest = time.time() - SPOOL_TTL_S
        for entry in self.root.iterdir():
            if entry.is_dir() and entry.stat().st_mtime < oldest:
                shutil.rmtree(entry, ignore_errors=True)


def token_digest(token: str) -> str:
    """How the spools' names and their owner's name the windows' token."""
    return hashlib.sha256(token.encode()).hexdigest()[:16]


def _window_markets(source: WindowSource, window: Window, markets: pl.DataFrame) -> pl.DataFrame:
    """The markets of every day of the window as the source lists them, with the partition's own: each once."""
    listed = source.window_markets(window.first, window.last).rows
    return pl.concat([markets, listed]).unique("id", keep="first", maintain_order=True)


@dataclass
class _Spool:
    """A window's rows of one table on disk, day by day, as the sweep streamed them."""

    directory: Path
    table: str
    swept: set[str]
    days: dict[str, list[list[object]]]  # per day: ["rows", offset, length] and ["done", market id] in order
    rejects: dict[str, list[list[int]]]  # per day: [offset, length] of its rejects
    incomplete: dict[str, str] = field(default_factory=dict)  # market -> the oldest moment reached (ISO 8601)

    @classmethod
    def load(cls, directory: Path) -> _Spool:
        manifest = orjson.loads((directory / MANIFEST).read_bytes())
        return cls(directory, manifest["table"], set(manifest["swept"]), manifest["days"], manifest["rejects"],
                   manifest["incomplete"])

    @classmethod
    def record(cls, directory: Path, table: str, window: Window, sweep: Iterable[Normalized | MarketsDone],
               swept: set[str]) -> _Spool:
        """Spool the sweep's rows, split by day (complete once `completed` has written the manifest)."""
        directory.mkdir(parents=True, exist_ok=True)
        spool = cls(directory, table, swept, {str(d): [] for d in window.days}, {str(d): [] for d in window.days})
        time_column = str(TABLES[table].time_column)
        with cyclic_gc_per_chunk(), _Segments(directory / ROWS) as segments:
            for item in sweep:
                if isinstance(item, MarketsDone):
                    for entries in spool.days.values():
                        entries.append(["done", item.through])
                    continue
                gc.collect()  # the pages that requests' cyclic garbage still holds (see cyclic_gc_per_chunk)
                for day, rows in _by_day(item.rows, pl.col(time_column), window):
                    spool.days[day].append(["rows", *segments.write(rows)])
                for day, rejects in _by_day(item.rejects, _reject_time(), window, default=str(window.last)):
                    spool.rejects[day].append(list(segments.write(rejects)))
        return spool

    def completed(self, coverage: Coverage) -> _Spool:
        """Write the manifest, with how far the sweep reached: the spool is complete."""
        self.incomplete = {market: moment.astimezone(UTC).isoformat() for market, moment
                           in coverage.incomplete.items()}
        manifest = {"table": self.table, "swept": sorted(self.swept), "days": self.days, "rejects": self.rejects,
                    "incomplete": self.incomplete}
        with replaced_atomically(self.directory / MANIFEST) as temporary:
            temporary.write_bytes(orjson.dumps(manifest))
        return self

    def replay(self, day: date, asked: set[str]) -> Iterator[Normalized | MarketsDone]:
        """The day's rejects, then its rows of the asked markets and the sweep's `MarketsDone` items, in the
        sweep's order."""
        key = str(day)
        asked_ids = pl.Series(sorted(asked), dtype=pl.String()).implode()
        no_rows = pl.DataFrame(schema=TABLES[self.table].polars_schema)
        no_rejects = pl.DataFrame(schema=REJECTS_SCHEMA)
        with open(self.directory / ROWS, "rb") as file:
            yield Normalized(no_rows, pl.concat([no_rejects, *(_read(file, span) for span in self.rejects[key])]))
            for entry in self.days[key]:
                if entry[0] == "done":
                    yield MarketsDone(str(entry[1]))
                    continue
                rows = _read(file, (int(entry[1]), int(entry[2])))  # type: ignore[call-overload]
                yield Normalized(rows.filter(pl.col(MARKET).is_in(asked_ids)).with_columns(pl.lit(day).alias("date")),
                                 no_rejects)

    def served(self, day: date, window: Window) -> None:
        """Note that the day has landed from the spool; the spool goes once every day has."""
        (self.directory / f"served-{day}").touch()
        if all((self.directory / f"served-{d}").exists() for d in window.days):
            shutil.rmtree(self.directory, ignore_errors=True)
            if not any(entry.is_dir() for entry in self.directory.parent.iterdir()):  # nor the other table's
                shutil.rmtree(self.directory.parent, ignore_errors=True)


def _by_day(frame: pl.DataFrame, moment: pl.Expr, window: Window,
            default: str | None = None) -> Iterator[tuple[str, pl.DataFrame]]:
    """The frame's rows split by the UTC day of `moment`; rows outside the window go to `default` if given,
    else nowhere (a run of a day drops the rows of other days alike)."""
    if frame.is_empty():
        return
    day = moment.dt.date().cast(pl.String())
    inside = day.is_in([str(d) for d in window.days])
    keyed = frame.with_columns(pl.when(inside).then(day).otherwise(pl.lit(default)).alias("_day"))
    for (key,), part in keyed.partition_by("_day", as_dict=True, include_key=False).items():
        if key is not None:
            yield str(key), part


def _reject_time() -> pl.Expr:
    """The time a rejected record says it is of (its `timestamp`, Unix seconds or ISO 8601), null if none."""
    text = pl.col("raw").str.json_path_match("$.timestamp")
    return pl.coalesce(parse_unix(text.cast(pl.Float64, strict=False)), parse_iso(text))


class _Segments:
    """One append-only file of Arrow IPC segments; closed on exit."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.file: IO[bytes] | None = None

    def __enter__(self) -> _Segments:
        self.file = open(self.path, "wb")
        return self

    def __exit__(self, *exc: object) -> None:
        assert self.file is not None
        self.file.close()

    def write(self, frame: pl.DataFrame) -> tuple[int, int]:
        assert self.file is not None
        start = self.file.tell()
        frame.write_ipc_stream(self.file, compression="lz4")
        return start, self.file.tell() - start


def _read(file: IO[bytes], span: tuple[int, int] | list[int]) -> pl.DataFrame:
    file.seek(span[0])
    return pl.read_ipc_stream(io.BytesIO(file.read(span[1])))

