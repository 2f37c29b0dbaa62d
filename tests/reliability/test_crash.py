"""Crash safety: a backfill SIGKILLed at many distinct points leaves a lake that is whole and readable, and a
rerun converges to what an uninterrupted run lands.

Kill points are requests, not sleeps: the test owns the loopback sandbox, and its handler thread SIGKILLs
the backfill when request N arrives, so the backfill dies between sending request N and reading its answer.
With no faults the backfill's requests come in the same order every run (the killing request is compared
with request N of the uninterrupted run), so each N is one distinct point of the work. Points fall in the
middle of the trades and price-history streams too, where the partition's temporary file is half written.
Kills come in rounds of four: a run killed early, then reruns from its leftovers killed later and later,
then a rerun that must converge. Half the rounds start from an empty lake (new partitions must appear whole or not
at all), half from a complete one (a rewritten partition must stay the previous one until its rename).
"""

from __future__ import annotations

import os
import shutil
import signal
from dataclasses import dataclass
from pathlib import Path

import pytest
from polars.testing import assert_frame_equal

from pipeline.cli import main as cli
from tests.support.served import (
    SECRET,
    SeenRequest,
    Served,
    api_env,
    assert_lake_consistent,
    backfill_args,
    backfill_process,
    copy_lake,
    lake_rows,
    print_table,
    run_backfill,
    serve,
)

KILL_POINTS = 20
KILLS_PER_ROUND = 4


@dataclass
class KillReport:
    point: int
    start: str
    request: str
    changed: list[str]
    leftovers: int


def _spread(requests: int, points: int) -> list[int]:
    """`points` distinct request numbers spread evenly from the first request to the last."""
    assert requests >= points, f"the run makes only {requests} requests: too few for {points} kill points"
    return sorted({1 + round(i * (requests - 1) / (points - 1)) for i in range(points)})


def _partition_files(data_dir: Path) -> dict[str, int]:
    """Partition and rejects files by their path in the lake, with their inode (a rename changes it)."""
    lake = data_dir / "lake"
    if not lake.exists():
        return {}
    return {str(p.relative_to(lake).parent): p.stat().st_ino for p in lake.rglob("*.parquet")}


def _rerun_in_process(url: str, data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The rerun, through the same command-line entry point, in this process (it spares a Dagster import)."""
    with monkeypatch.context() as patch:
        patch.delenv("DAGSTER_HOME", raising=False)
        for name, value in api_env(url, data_dir).items():
            if name.startswith("PMW_"):
                patch.setenv(name, value)
        assert cli.main(backfill_args()) == 0


def _killed_run(served: Served, data_dir: Path, point: int, expected: str) -> str:
    """Run a backfill over `data_dir` and SIGKILL it when it sends request `point`; return that request.

    The catalogue cache is dropped first, so that the run makes the uninterrupted run's requests in order.
    """
    shutil.rmtree(data_dir / "cache", ignore_errors=True)
    killing: list[SeenRequest] = []
    with backfill_process(api_env(served.url, data_dir), backfill_args()) as process:

        def kill_at_point(request: SeenRequest) -> None:
            if request.number == point:
                os.kill(process.pid, signal.SIGKILL)
                killing.append(request)

        served.app.watch(kill_at_point)
        try:
            process.communicate(timeout=120)  # drains the pipes while it waits
        finally:
            served.app.watch(None)
    assert process.returncode == -signal.SIGKILL, f"the run was not killed at request {point}"
    assert killing[0].work == expected, "the requests of a run must come in the same order every run"
    return killing[0].work


def test_a_backfill_killed_at_20_points_leaves_a_consistent_lake_and_reruns_converge(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pytestconfig: pytest.Config
) -> None:
    """Rounds of four kills then a rerun: each run of a round starts from the previous one's leftovers and is
    killed later than it, then an uninterrupted rerun must land exactly what the reference run landed."""
    with serve() as served:
        reference_dir = tmp_path / "reference"
        code, out, err = run_backfill(api_env(served.url, reference_dir), backfill_args())
        assert code == 0, out + err
        work = [request.work for request in served.app.seen]
        reference = lake_rows(reference_dir)
        assert len(reference) == 10, "every table of both platforms must land in the uninterrupted run"

        points = _spread(len(work), KILL_POINTS)
        rounds = len(points) // KILLS_PER_ROUND
        reports = []
        for number in range(rounds):
            data_dir = tmp_path / f"round-{number}"
            start = "empty" if number % 2 == 0 else "complete"
            if start == "complete":
                copy_lake(reference_dir, data_dir)
            for kill, point in enumerate(points[number::rounds]):
                before = _partition_files(data_dir)
                request = _killed_run(served, data_dir, point, work[point - 1])
                leftovers = assert_lake_consistent(data_dir)
                for key, frame in lake_rows(data_dir).items():
                    assert_frame_equal(frame, reference[key])  # a partition is whole or absent, never torn
                after = _partition_files(data_dir)
                changed = sorted(path for path, inode in after.items() if before.get(path) != inode)
                reports.append(KillReport(point, start if kill == 0 else "killed", request, changed, len(leftovers)))

            _rerun_in_process(served.url, data_dir, monkeypatch)
            assert not assert_lake_consistent(data_dir), "the rerun must clean the temporary files it meets"
            converged = lake_rows(data_dir)
            assert converged.keys() == reference.keys()
            for key, frame in converged.items():
                assert_frame_equal(frame, reference[key])

    _print_table(pytestconfig, len(work), reports)
    assert len({r.point for r in reports}) >= 20
    assert len({r.request for r in reports}) >= 20, "kill points must be distinct pieces of the work"
    assert any(r.leftovers for r in reports), "some kills must fall in the middle of a partition's write"
    assert SECRET not in out + err


def _print_table(config: pytest.Config, requests: int, reports: list[KillReport]) -> None:
    rows = [
        [r.point, r.start, r.request[:58], r.leftovers,
         ", ".join(p.replace("platform=", "").replace("/date=2026-11-21", "") for p in r.changed) or "-"]
        for r in reports
    ]
    columns = ["request", "start", "killed while awaiting", "tmp", "landed by the killed run"]
    print_table(config, f"Crash test: kill points (of {requests} requests in an uninterrupted run):", columns, rows)
