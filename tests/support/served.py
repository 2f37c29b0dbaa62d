"""Shared pieces of the reliability tests: a sandbox server that sees every request, backfills run as
`pmw backfill` processes of their own (forked warm: tests.support.warm), and checks that a lake is whole and
readable."""

from __future__ import annotations

import os
import shutil
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import duckdb
import polars as pl
import pyarrow.parquet as pq
import pytest

from pipeline.engine.config import Settings
from pipeline.engine.lake.layout import DATA_FILE, REJECTS_DIR, REJECTS_FILE, ROUND_PREFIX
from pipeline.engine.lake.store import Lake
from pipeline.engine.lake.verify import verify_lake
from pipeline.engine.schema import TABLES
from pipeline.engine.warehouse.views import connect_read_only, raw_views, relocate_views
from pmw_sandbox import SandboxApp, SandboxConfig
from pmw_sandbox.app import SandboxResponse
from pmw_sandbox.server import SandboxServer
from tests.support.loopback import LoopbackServer
from tests.support.paths import REPO_ROOT
from tests.support.warm import WarmProcess
from tests.support.world import strict_budget_world

SECRET = "sk-live-RELIABILITY-5ec2e7-DO-NOT-LEAK"
DAY = date(2026, 11, 21)
PLATFORMS = ("polymarket", "kalshi")
# About 50 requests and 10 Dagster steps for one day of both platforms: small enough to run many times.
SMALL_WORLD = strict_budget_world(DAY)


@dataclass(frozen=True)
class SeenRequest:
    """A request as the server saw it: enough to say which piece of the work it was."""

    number: int  # 1, 2, ... in arrival order
    path: str
    query: tuple[tuple[str, str], ...]
    key: str | None

    @property
    def work(self) -> str:
        """The request without its cursor (cursors are signed and differ run to run): the piece of work."""
        shown = [f"{k}={v}" for k, v in self.query if k not in ("cursor", "limit", "start_ts", "end_ts")]
        page = " (next page)" if any(k == "cursor" for k, _ in self.query) else ""
        return f"{self.path}?{'&'.join(shown)}{page}"


class WatchedSandbox(SandboxApp):
    """The sandbox app, recording every request it answers and calling `on_request` before answering it.

    The hook runs on the server's handler thread while the client waits for its answer, so whatever it
    does (SIGKILL the client) happens at a known point of the client's work: between sending request N
    and reading its answer.
    """

    def __init__(self, config: SandboxConfig) -> None:
        super().__init__(config)
        self.seen: list[SeenRequest] = []
        self.on_request: Callable[[SeenRequest], None] | None = None
        self._seen_lock = threading.Lock()

    def watch(self, on_request: Callable[[SeenRequest], None] | None = None) -> None:
        """Start numbering requests from 1 again (a new run), calling `on_request` on each."""
        with self._seen_lock:
            self.seen, self.on_request = [], on_request

    def handle(
        self, method: str, path: str, query: Sequence[tuple[str, str]], headers: Mapping[str, str]
    ) -> SandboxResponse:
        key = next((v for k, v in headers.items() if k.lower() == "x-api-key"), None)
        with self._seen_lock:
            request = SeenRequest(len(self.seen) + 1, path, tuple(query), key)
            self.seen.append(request)
        if self.on_request is not None:
            self.on_request(request)
        return super().handle(method, path, query, headers)


@dataclass
class Served:
    app: WatchedSandbox
    server: SandboxServer

    @property
    def url(self) -> str:
        return self.server.url


@contextmanager
def serve(config: SandboxConfig | None = None) -> Iterator[Served]:
    """A WatchedSandbox of the small world on 127.0.0.1 (an ephemeral port), stopped on exit."""
    app = WatchedSandbox(config or SandboxConfig(world=SMALL_WORLD, api_keys=(SECRET,)))
    with LoopbackServer(app) as server:
        report = server.httpd.handle_error

        def handle_error(request: object, client_address: object) -> None:
            """Clients killed mid-request are what the crash test does: only other errors are reported."""
            if not isinstance(sys.exc_info()[1], ConnectionError):
                report(request, client_address)  # type: ignore[arg-type]

        server.httpd.handle_error = handle_error  # type: ignore[method-assign]
        yield Served(app, server)


def api_env(url: str, data_dir: Path, **extra: str) -> dict[str, str]:
    """The environment of a backfill against `url` with the secret key, a private data dir and budget."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PMW_", "DAGSTER_"))}
    env.update(
        {
            "PMW_SOURCE": "api",
            "PMW_API_URL": url,
            "PMW_API_KEY": SECRET,
            "PMW_DATA_DIR": str(data_dir),
            "PMW_RATE_LIMIT_DB": str(data_dir.parent / f"{data_dir.name}-budget.sqlite"),
            "PMW_RATE_LIMIT_PER_MIN": "100000",
            "PMW_MAX_BACKOFF_S": "0.05",
            "PYTHONPATH": str(REPO_ROOT),
            **extra,
        }
    )
    return env


def backfill_args(platforms: Sequence[str] = PLATFORMS, start: date = DAY, end: date | None = None) -> list[str]:
    """`pmw backfill` of the partitions, without the SQL models' rebuild (these suites are about ingestion)."""
    return ["backfill", "--platform", ",".join(platforms), "--start", start.isoformat(),
            "--end", (end or start).isoformat(), "--no-models"]


@contextmanager
def backfill_process(env: Mapping[str, str], args: Sequence[str]) -> Iterator[WarmProcess]:
    """`pmw <args>` in a process of its own, forked warm (tests.support.warm), with the environment `env` and
    stdout and stderr captured; killed on exit if still running."""
    process = WarmProcess(env, args)
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate(timeout=60)


def run_backfill(env: Mapping[str, str], args: Sequence[str], timeout: float = 300) -> tuple[int, str, str]:
    """Run a backfill to its end: (exit code, stdout, stderr)."""
    with backfill_process(env, args) as process:
        out, err = process.communicate(timeout=timeout)
        return process.returncode, out, err


def run_backfill_in_process(env: Mapping[str, str], args: Sequence[str], monkeypatch: pytest.MonkeyPatch) -> int:
    """`pmw <args>` through the command line's entry point in this process, with the PMW_ settings of `env` and
    nothing else of them: for the runs that only set a test up (a reference, a lake to start from). It spares
    the Python start and the Dagster import that a process of its own costs."""
    from pipeline.cli import main as cli

    with monkeypatch.context() as patch:
        patch.delenv("DAGSTER_HOME", raising=False)
        for name in [name for name in os.environ if name.startswith("PMW_")]:
            patch.delenv(name)
        for name, value in env.items():
            if name.startswith("PMW_"):
                patch.setenv(name, value)
        return cli.main(list(args))


def lake_rows(data_dir: Path, platforms: Sequence[str] = PLATFORMS, days: Sequence[date] = (DAY,),
              lake_url: str | None = None) -> dict[tuple[str, str, date], pl.DataFrame]:
    """Every landed partition among `platforms` x `days`, without the fetch time (it differs run to run); of the
    lake at `lake_url` (PMW_LAKE_URL) when given."""
    lake = Lake.of(Settings(data_dir=data_dir, lake_url=lake_url))
    found = {}
    for table in TABLES:
        for platform in platforms:
            for day in days:
                frame = lake.read_partition(table, platform, day)
                if frame is not None:
                    found[(table, platform, day)] = frame.drop("_fetched_at")
    return found


def assert_lake_consistent(data_dir: Path, lake_url: str | None = None) -> list[Path]:
    """The lake (at `lake_url`, PMW_LAKE_URL, when given) is readable and consistent; returns the writers' temporary
    files left on disk.

    - every file the readers' globs match is a whole partition file (read in full), never a temporary;
    - every rejects file reads in full;
    - DuckDB's raw views, built from the lake as the warehouse builds them, query every table without
      error, and so do the warehouse file's own views (opened read-only, as an analyst does) if it exists.
    """
    if lake_url is not None:
        return _assert_object_lake_consistent(data_dir, lake_url)
    lake = Lake(data_dir / "lake")
    if not lake.root.exists():
        return []
    for table in TABLES:
        for path in Path("/").glob(lake.glob(table).lstrip("/")):
            assert path.name == DATA_FILE, f"{path} is visible to Lake.glob but is not a partition file"
            pq.read_table(path)  # raises on a torn or half-written file
    for path in (lake.root / REJECTS_DIR).rglob("*.parquet"):
        assert path.name == REJECTS_FILE, f"unexpected file {path} among the rejects"
        pq.read_table(path)
    return _assert_views_read(lake, data_dir)


def _assert_object_lake_consistent(data_dir: Path, lake_url: str) -> list[Path]:
    """`assert_lake_consistent` of a lake on an object store: every object read whole (each page against its
    checksum), the raw views and the warehouse's own read through DuckDB; the temporaries left on this host."""
    lake = Lake.of(Settings(data_dir=data_dir, lake_url=lake_url))
    for path, problem in verify_lake(lake):
        assert problem is None, f"{path}: {problem.problem}"
        assert str(path).rsplit("/", 1)[1] in (DATA_FILE, REJECTS_FILE) or ROUND_PREFIX in str(path), path
    return _assert_views_read(lake, data_dir)

def _assert_views_read(lake: Lake, data_dir: Path) -> list[Path]:
    """The raw views over `lake`, made in a fresh DuckDB, and the warehouse's own views (when it exists) read every
    table; the temporaries a write left in the lake's folder on this host."""
    with duckdb.connect() as connection:
        lake.store.attach(connection)
        connection.execute("CREATE SCHEMA raw")
        for view in raw_views(lake):
            connection.execute(view.statement)
            connection.execute(f"SELECT count(*) FROM raw.{view.name}").fetchall()
    warehouse = data_dir / "warehouse.duckdb"
    if warehouse.exists():
        relocate_views(warehouse, lake)  # as every pmw command does first: a copied data dir reads its own lake
        with connect_read_only(warehouse, lake) as connection:
            for table in TABLES:
                connection.execute(f"SELECT count(*) FROM raw.{table}").fetchall()
    return sorted(lake.root.rglob(".*.tmp")) if lake.root.exists() else []


def copy_lake(source: Path, target: Path) -> None:
    """A copy of a data dir's lake and warehouse, without its catalogue cache (so a run re-lists it)."""
    shutil.copytree(source / "lake", target / "lake")
    shutil.copy2(source / "warehouse.duckdb", target / "warehouse.duckdb")


def print_table(config: pytest.Config, title: str, columns: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
    """A table of a test's findings on pytest's terminal, past its output capture, so that CI's log shows it
    even when every test passes."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    capture = config.pluginmanager.get_plugin("capturemanager")
    if reporter is None or capture is None:
        return
    lines = [list(columns), *([str(v) for v in row] for row in rows)]
    widths = [max(map(len, column)) for column in zip(*lines, strict=True)]
    with capture.global_and_fixture_disabled():
        reporter.write_line("")
        reporter.write_line(title)
        for line in lines:
            reporter.write_line("  " + "  ".join(v.ljust(w) for v, w in zip(line, widths, strict=True)).rstrip())
