"""`pmw` commands started together on a fresh DAGSTER_HOME share one instance instead of racing to create it."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import dagster as dg
import pytest

from pipeline.cli.common.instance import pmw_instance
from pipeline.defs.automation.jobs import API_POOLS
from tests.support.paths import REPO_ROOT
from tests.support.warm import warm_process

PROCESSES = 4
TRIALS = 1  # without the lock, four processes at once corrupted each of the seven fresh homes tried


def _open_at(home: str, start_at: float, said: str) -> None:
    """In a process of its own: wait for the common start, open the instance as `pmw` does, read it, and say
    how that went."""
    os.environ["DAGSTER_HOME"] = home
    while time.time() < start_at:
        pass
    try:
        instance = pmw_instance(Path(home) / "data")  # DAGSTER_HOME is set: the data dir is not read
        instance.get_runs(limit=1)
        outcome = "ok"
    except Exception as error:  # the test reports what any process met
        outcome = f"{type(error).__name__}: {error}"[:300]
    Path(said).write_text(outcome)


def test_first_uses_at_once_leave_a_working_instance(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for trial in range(TRIALS):
        home = tmp_path / f"home{trial}"
        home.mkdir()
        shutil.copy(REPO_ROOT / "pipeline" / "defs" / "dagster.yaml", home)
        start_at = time.time() + 0.5
        said = [tmp_path / f"said{trial}-{n}" for n in range(PROCESSES)]
        processes = [warm_process(_open_at, str(home), start_at, str(path)) for path in said]
        for process in processes:
            process.start()
        for process in processes:
            process.join(60)
        assert [path.read_text() for path in said] == ["ok"] * PROCESSES
        monkeypatch.setenv("DAGSTER_HOME", str(home))
        with dg.DagsterInstance.get() as instance:  # what any later command does
            assert instance.get_runs(limit=1) == []


def test_the_api_pools_are_listed_from_the_first_use(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 35, point 8: the UI's Deployment > Concurrency lists both API pools, with the project's limit, as
    soon as any pmw command has opened the instance, not only once the backfill sensor has run."""
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    instance = pmw_instance(tmp_path / "data")
    storage = instance.event_log_storage
    assert storage.get_concurrency_keys() >= set(API_POOLS)
    assert {storage.get_concurrency_info(pool).slot_count for pool in API_POOLS} == {1}
