"""Concurrency: runs of the same partition at once, and backfills of different partitions in parallel while an
analyst holds the warehouse open read-only and queries it.

The known limit (pipeline/engine/lake/reads.py): DuckDB opens a Parquet file by name more than once per query, so a
query that reads a partition while that partition is *replaced* can pair the old footer with the new file and
fail. It cannot arise in the parallel-backfill test below, and the test checks why: the partitions being
backfilled do not exist when the runs start, each run writes each of its partitions exactly once, and the
two runs' partitions are disjoint. So every rename the analyst can meet creates a name: a query that
globbed before it does not know the file, a query that globbed after it reads a complete file that nothing
replaces while it runs. Re-running partitions that exist while they are queried is the case that limit
describes (the daily look-back, a rerun after a failure); the partitions already there (the day before)
are only read here, never rewritten.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from datetime import date, timedelta
from pathlib import Path

import duckdb
import pytest
from polars.testing import assert_frame_equal

from pipeline.engine.lake.store import Lake
from pipeline.engine.schema import TABLES
from pmw_sandbox import SandboxConfig
from tests.support.loopback import LoopbackServer
from tests.support.served import (
    DAY,
    PLATFORMS,
    SECRET,
    SMALL_WORLD,
    SeenRequest,
    api_env,
    assert_lake_consistent,
    backfill_args,
    backfill_process,
    lake_rows,
    run_backfill_in_process,
    serve,
)

OTHER_KEY = "sk-live-second-process"
BARRIER_TIMEOUT_S = 120


def _overlapped(seen: list[SeenRequest], keys: tuple[str, ...]) -> bool:
    """Whether every run (told apart by its key) sent a request after every other run's first request."""
    numbers = {key: [request.number for request in seen if request.key == key] for key in keys}
    return all(numbers[a] and numbers[b] and max(numbers[a]) > min(numbers[b]) for a in keys for b in keys)


def _meet_at_first_request(keys: tuple[str, ...]) -> tuple[threading.Barrier, Callable[[SeenRequest], None]]:
    """A request hook that holds each key's first request until every key has sent one: the runs that use
    those keys are then certainly running at the same time, whatever the machine's load. The runs must not
    wait for each other before their first request (a shared lock), or they would meet only when one of
    them timed out."""
    barrier = threading.Barrier(len(keys), timeout=BARRIER_TIMEOUT_S)
    first: set[str | None] = set()
    lock = threading.Lock()

    def hook(request: SeenRequest) -> None:
        with lock:
            waits = request.key not in first
            first.add(request.key)
        if waits:
            barrier.wait()

    return barrier, hook


@pytest.mark.slow
def test_two_runs_of_the_same_partition_at_once_land_one_correct_result(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = SandboxConfig(world=SMALL_WORLD, api_keys=(SECRET, OTHER_KEY))
    with serve(config) as served:
        reference_dir, shared_dir = tmp_path / "reference", tmp_path / "shared"
        reference_env = api_env(served.url, reference_dir)
        assert run_backfill_in_process(reference_env, backfill_args(["kalshi"]), monkeypatch) == 0

        barrier, hook = _meet_at_first_request((SECRET, OTHER_KEY))
        served.app.watch(hook)
        # A second address for the same app: the runs' first requests list the catalogue under a lock on its
        # cache entry, which is per API address, so each run must have its own for both to reach the barrier.
        with LoopbackServer(served.app) as other:
            envs = [api_env(served.url, shared_dir), api_env(other.url, shared_dir, PMW_API_KEY=OTHER_KEY)]
            with backfill_process(envs[0], backfill_args(["kalshi"])) as first, backfill_process(
                envs[1], backfill_args(["kalshi"])
            ) as second:
                outputs = [first.communicate(timeout=300), second.communicate(timeout=300)]
        served.app.on_request = None
        assert not barrier.broken
        for process, (out, err) in zip((first, second), outputs, strict=True):
            assert process.returncode == 0, out + err

    keys = Counter(request.key for request in served.app.seen)
    assert keys[SECRET] > 10 and keys[OTHER_KEY] > 10, "both runs must have done the whole work"
    assert _overlapped(served.app.seen, (SECRET, OTHER_KEY)), "the runs must have run at the same time"
    assert not assert_lake_consistent(shared_dir)
    reference, shared = lake_rows(reference_dir, ["kalshi"]), lake_rows(shared_dir, ["kalshi"])
    assert shared.keys() == reference.keys() and len(reference) == len(TABLES)
    for key, frame in shared.items():
        assert_frame_equal(frame, reference[key])


ANALYST_QUERIES = {
    "trades per partition": "SELECT platform, date, count(*) FROM raw.trades GROUP BY ALL",
    "markets per partition": "SELECT platform, date, count(*) FROM raw.markets GROUP BY ALL",
    "price points per partition": "SELECT platform, date, count(*) FROM raw.price_history GROUP BY ALL",
    "volume by category": """
        SELECT m.platform, m.category, count(*) AS trades, sum(t.price * t.size) AS volume
        FROM raw.trades AS t JOIN raw.markets AS m
            ON m.platform = t.platform AND m.date = t.date AND m.id = t.market_id
        GROUP BY ALL
    """,
}


class Analyst(threading.Thread):
    """Holds one read-only connection to the warehouse file and runs the queries in a loop until stopped,
    keeping what each per-partition count query answered and every error. The round that sees the stop
    is run in full, so the last round starts after whatever the stop waited for."""

    def __init__(self, warehouse: Path) -> None:
        super().__init__(name="analyst", daemon=True)
        self.connection = duckdb.connect(str(warehouse), read_only=True)
        self.stop = threading.Event()
        self.queries = 0
        self.errors: list[str] = []
        self.seen: list[tuple[str, tuple[str, date, int]]] = []

    def run(self) -> None:
        with self.connection:
            stopping = False
            while not stopping:
                stopping = self.stop.is_set()
                for name, sql in ANALYST_QUERIES.items():
                    try:
                        rows = self.connection.execute(sql).fetchall()
                    except duckdb.Error as error:
                        self.errors.append(f"{name}: {error}")
                        continue
                    self.queries += 1
                    if name.endswith("per partition"):
                        self.seen += [(name, row) for row in rows]


@pytest.mark.slow
def test_parallel_backfills_of_different_partitions_while_an_analyst_queries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data_dir = tmp_path / "data"
    before, days = DAY - timedelta(days=2), (DAY - timedelta(days=1), DAY)
    config = SandboxConfig(world=SMALL_WORLD, api_keys=(SECRET, OTHER_KEY))
    with serve(config) as served:
        assert run_backfill_in_process(api_env(served.url, data_dir), backfill_args(start=before), monkeypatch) == 0
        lake = Lake(data_dir / "lake")
        assert all(lake.partitions(table) == [(p, before) for p in sorted(PLATFORMS)] for table in TABLES), (
            "the backfilled partitions must not exist yet: see the module's docstring"
        )

        analyst = Analyst(data_dir / "warehouse.duckdb")
        analyst.start()
        try:
            barrier, hook = _meet_at_first_request((SECRET, OTHER_KEY))
            served.app.watch(hook)
            envs = [api_env(served.url, data_dir), api_env(served.url, data_dir, PMW_API_KEY=OTHER_KEY)]
            runs = [backfill_args([platform], *days) for platform in PLATFORMS]
            with backfill_process(envs[0], runs[0]) as first, backfill_process(envs[1], runs[1]) as second:
                outputs = [first.communicate(timeout=300), second.communicate(timeout=300)]
            served.app.on_request = None
            queries_during_runs = analyst.queries
        finally:
            analyst.stop.set()
            analyst.join(timeout=60)
    assert not barrier.broken
    assert _overlapped(served.app.seen, (SECRET, OTHER_KEY)), "the backfills must have run at the same time"
    for process, (out, err) in zip((first, second), outputs, strict=True):
        assert process.returncode == 0, out + err
        assert "in use elsewhere" in err, "the runs must have met the analyst's hold on the warehouse file"

    print(f"\nanalyst: {analyst.queries} queries ({queries_during_runs} while the backfills ran), "
          f"{len(analyst.errors)} errors")
    assert not analyst.errors, analyst.errors[:5]
    assert queries_during_runs > len(ANALYST_QUERIES)
    assert not assert_lake_consistent(data_dir)

    # Each partition the analyst saw was whole: its count is the count it has in the end.
    final = lake_rows(data_dir, PLATFORMS, (before, *days))
    assert len(final) == len(TABLES) * len(PLATFORMS) * 3
    tables = {"trades per partition": "trades", "markets per partition": "markets",
              "price points per partition": "price_history"}
    for name, (platform, day, count) in analyst.seen:
        assert count == final[(tables[name], platform, day)].height, f"{name}: a partial {platform} {day}"
    seen_partitions = {(platform, day) for _, (platform, day, _) in analyst.seen}
    assert seen_partitions == {(p, d) for p in PLATFORMS for d in (before, *days)}, "the analyst saw the new days"
