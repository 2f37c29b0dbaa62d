"""The real Dagster daemon, with the repo's dagster.yaml (its run queue looked at every second) and the instance's
storage on PostgreSQL as a deployment keeps it (docs/deployment.md), fills a short window from a strict loopback
sandbox."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from itertools import pairwise
from pathlib import Path
from urllib.parse import urlsplit

import dagster as dg
import psycopg
import pytest

from pipeline.defs.automation.budget import PartitionRef
from pipeline.defs.automation.jobs import ASSET_NAMES
from pipeline.defs.automation.sensor import BACKFILL_TRIGGER, newest_scheduled_day
from pmw_sandbox import SandboxApp
from pmw_sandbox.server import SandboxServer
from tests.support.loopback import LoopbackServer
from tests.support.paths import REPO_ROOT
from tests.support.world import STRICT_BUDGET, strict_budget_env, strict_budget_world, strict_config

REPO = REPO_ROOT
BIN = Path(sys.executable).parent  # the environment's dagster and dagster-daemon commands
SECRET = "sk-daemon-test-5b1e"
END = newest_scheduled_day(datetime.now(UTC))  # yesterday, once the daily tick of 00:30 UTC has passed
WINDOW = [PartitionRef(END, p) for p in ("polymarket", "kalshi")]
# Three times the markets of the strict-budget world: the window's two partitions take about 126
# requests, more than one rate window's budget, in two runs (each run is a process that loads the definitions).
WORLD = replace(strict_budget_world(END), markets_per_event=15)
DEADLINE_S = 150


@pytest.fixture
def strict_server() -> Iterator[SandboxServer]:
    app = SandboxApp(strict_config(world=WORLD, api_keys=(SECRET,)))
    with LoopbackServer(app) as server:
        yield server


# Appended to the copy of dagster.yaml: the daemon looks at the run queue every second instead of every five
# (Dagster's default), so that each run of the window starts soon after the one before it ends. The pools,
# run monitoring and everything else stay the repo's.
QUICK_DEQUEUE = """
run_coordinator:
  module: dagster.core.run_coordinator
  class: QueuedRunCoordinator
  config:
    dequeue_interval_seconds: 1
"""


# Appended too: deploy/dagster-storage.yaml, the instance on PostgreSQL as docs/deployment.md tells a deployment to
# keep it, its connection read from the environment by the daemon, its run workers and this test alike.
POSTGRES_STORAGE = REPO / "deploy" / "dagster-storage.yaml"


@pytest.fixture
def dagster_database(postgres_url: str) -> dict[str, str]:
    """A fresh database on the session's PostgreSQL server (tests/conftest.py), for this test's instance alone:
    the variables that POSTGRES_STORAGE reads (the test server trusts loopback, so the password is not checked)."""
    name = f"dagster_{os.getpid()}_{time.monotonic_ns()}"
    with psycopg.connect(postgres_url, autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    server = urlsplit(postgres_url)
    return {"DAGSTER_PG_HOST": str(server.hostname), "DAGSTER_PG_PORT": str(server.port), "DAGSTER_PG_DB": name,
            "DAGSTER_PG_USERNAME": str(server.username), "DAGSTER_PG_PASSWORD": "unchecked"}


def _dagster_home(tmp_path: Path) -> Path:
    """A fresh DAGSTER_HOME holding the repo's dagster.yaml, as the README tells users to set one up (plus
    QUICK_DEQUEUE and POSTGRES_STORAGE)."""
    home = tmp_path / "dagster_home"
    home.mkdir()
    shutil.copy(REPO / "dagster.yaml", home / "dagster.yaml")
    with (home / "dagster.yaml").open("a") as config:
        config.write(QUICK_DEQUEUE + POSTGRES_STORAGE.read_text())
    return home


def _workspace(tmp_path: Path) -> Path:
    workspace = tmp_path / "workspace.yaml"
    workspace.write_text(
        f"load_from:\n  - python_module:\n      module_name: pipeline.definitions\n      working_directory: {REPO}\n"
    )
    return workspace


def _env(server: SandboxServer, tmp_path: Path, home: Path, database: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PMW_", "DAGSTER_"))}
    env.update(
        {
            "DAGSTER_HOME": str(home),
            **database,
            "DAGSTER_DISABLE_TELEMETRY": "1",
            "PMW_SOURCE": "api",
            "PMW_API_URL": server.url,
            "PMW_API_KEY": SECRET,
            "PMW_DATA_DIR": str(tmp_path / "data"),
            "PMW_RATE_LIMIT_DB": str(tmp_path / "budget.sqlite"),
            **strict_budget_env(),
            "PMW_BACKFILL_START": END.isoformat(),
            "PMW_BACKFILL_INTERVAL_S": "5",
        }
    )
    return env


def _dagster_cli(env: dict[str, str], *args: str) -> None:
    done = subprocess.run(
        [str(BIN / "dagster"), *args], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Stop the daemon and all it started (its session: code server, run workers): terminate, then kill."""
    group = process.pid
    for sig, grace_s in ((signal.SIGTERM, 20.0), (signal.SIGKILL, 10.0)):
        if not _group_alive(group):
            break
        os.killpg(group, sig)
        deadline = time.monotonic() + grace_s
        while _group_alive(group) and time.monotonic() < deadline:
            process.poll()  # reap the daemon itself, so that it does not linger as a zombie
            time.sleep(0.2)
    process.wait(timeout=10)


def _group_alive(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    return True


def _landed(instance: dg.DagsterInstance) -> set[PartitionRef]:
    per_asset = [instance.get_materialized_partitions(dg.AssetKey(name)) for name in ASSET_NAMES]
    return {PartitionRef.parse(key) for key in set.intersection(*per_asset)}


def _wait_for_window(instance: dg.DagsterInstance, daemon: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        assert daemon.poll() is None, f"the daemon exited:\n{log.read_text()[-3000:]}"
        failed = instance.get_runs(filters=dg.RunsFilter(statuses=[dg.DagsterRunStatus.FAILURE]))
        assert not failed, f"runs failed: {[r.tags.get('dagster/partition') for r in failed]}"
        if set(WINDOW) <= _landed(instance):
            return
        time.sleep(1)
    pytest.fail(
        f"after {DEADLINE_S} s only {sorted(map(str, _landed(instance)))} of {sorted(map(str, WINDOW))} "
        f"had landed; daemon log:\n{log.read_text()[-3000:]}"
    )


@pytest.mark.slow
def test_the_daemon_fills_the_window_inside_the_strict_budget(
    strict_server: SandboxServer, dagster_database: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = _dagster_home(tmp_path)
    env = _env(strict_server, tmp_path, home, dagster_database)
    for name, value in dagster_database.items():  # for this process's instance too
        monkeypatch.setenv(name, value)
    workspace = _workspace(tmp_path)
    log = tmp_path / "daemon.log"
    # The instance's storages are created here, before the daemon and the CLI open them side by side.
    with dg.DagsterInstance.from_config(str(home)) as instance:
        with log.open("wb") as out:
            daemon = subprocess.Popen(
                [str(BIN / "dagster-daemon"), "run", "-w", str(workspace)],
                env=env,
                cwd=tmp_path,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        try:
            # Started while the daemon loads the code location: the sensor ticks from the daemon's next loop on.
            _dagster_cli(env, "sensor", "start", "backfill_sensor", "-w", str(workspace))
            _wait_for_window(instance, daemon, log)
            records = instance.get_run_records(filters=dg.RunsFilter(tags={"pmw/trigger": BACKFILL_TRIGGER}))
            pools = {limit.name: limit.limit for limit in instance.event_log_storage.get_pool_limits()}
        finally:
            _stop(daemon)
    assert {PartitionRef.parse(r.dagster_run.tags["dagster/partition"]) for r in records} == set(WINDOW)
    assert pools == {"unified_api": 1, "platform_apis": 1}
    assert type(instance.run_storage).__name__ == "PostgresRunStorage"
    spans = sorted((r.start_time, r.end_time) for r in records if r.start_time and r.end_time)
    assert all(end <= next_start for (_, end), (next_start, _) in pairwise(spans)), (
        "the unified_api pool admits one run at a time"
    )
    app = strict_server.app
    assert app.requests_served > STRICT_BUDGET, "the window must need more than one rate window's budget"
    assert app.rate_limited_answers == 0, "the strict budget of 100 requests per rate window was exceeded"
