"""The real Dagster daemon, with pipeline/defs/dagster.yaml (its run queue looked at every second) and the instance's
storage on PostgreSQL as a deployment keeps it (docs/deployment.md), for one short night: the backfill sensor
fills the day before inside a strict loopback sandbox's budget, the daily schedule lands the night, and the SQL
models rebuild themselves once it has landed, with no one asking."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import replace
from datetime import UTC, date, datetime, timedelta
from itertools import pairwise
from pathlib import Path
from urllib.parse import urlsplit

import dagster as dg
import duckdb
import psycopg
import pytest

from pipeline.defs.automation.budget import PartitionRef
from pipeline.defs.automation.jobs import ASSET_NAMES
from pipeline.defs.automation.schedule import DAILY_TRIGGER
from pipeline.defs.automation.sensor import BACKFILL_TRIGGER
from pipeline.defs.sql_models.rebuild_sensor import SENSOR_NAME as REBUILD_SENSOR
from pmw_sandbox import SandboxApp
from tests.support.loopback import LoopbackServer
from tests.support.paths import REPO_ROOT
from tests.support.world import STRICT_BUDGET, strict_budget_env, strict_budget_world, strict_config

REPO = REPO_ROOT
BIN = Path(sys.executable).parent  # the environment's dagster and dagster-daemon commands
SECRET = "sk-daemon-test-5b1e"
PLATFORMS = ("polymarket", "kalshi")
# The night's tick (the test's PMW_DAILY_AT) is the whole minute in which the schedule is switched on. Dagster's
# scheduler launches every tick since a schedule was switched on (its recorded start), from its cron as the code
# location loaded by the daemon has it; the test records the start just before that minute, as if the schedule had
# been switched on a moment earlier, so that the daemon launches the night as it starts instead of the test waiting
# up to a minute for the next one.
# The backfill sensor ticks every two seconds: the marts' sensor settles for two of its ticks after a landing.
BACKFILL_INTERVAL_S = 2
SETTLE_S = 2 * BACKFILL_INTERVAL_S  # how long the marts' sensor waits after a landing (two backfill-sensor ticks)
DEADLINE_S = 200


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
def dagster_database(postgres_url: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """A fresh database on the session's PostgreSQL server (tests/conftest.py), for this test's instance alone:
    the variables that POSTGRES_STORAGE reads (the test server trusts loopback, so the password is not checked),
    set for this process's instance too."""
    name = f"dagster_{os.getpid()}_{time.monotonic_ns()}"
    with psycopg.connect(postgres_url, autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    server = urlsplit(postgres_url)
    database = {"DAGSTER_PG_HOST": str(server.hostname), "DAGSTER_PG_PORT": str(server.port), "DAGSTER_PG_DB": name,
                "DAGSTER_PG_USERNAME": str(server.username), "DAGSTER_PG_PASSWORD": "unchecked"}
    for variable, value in database.items():
        monkeypatch.setenv(variable, value)
    return database


def _dagster_home(tmp_path: Path) -> Path:
    """A fresh DAGSTER_HOME holding the repo's dagster.yaml, as the README tells users to set one up (plus
    QUICK_DEQUEUE and POSTGRES_STORAGE)."""
    home = tmp_path / "dagster_home"
    home.mkdir()
    shutil.copy(REPO / "pipeline" / "defs" / "dagster.yaml", home / "dagster.yaml")
    with (home / "dagster.yaml").open("a") as config:
        config.write(QUICK_DEQUEUE + POSTGRES_STORAGE.read_text())
    return home


def _workspace(tmp_path: Path) -> Path:
    workspace = tmp_path / "workspace.yaml"
    workspace.write_text(
        f"load_from:\n  - python_module:\n      module_name: pipeline.definitions\n      working_directory: {REPO}\n"
    )
    return workspace


def _env(api_url: str, tmp_path: Path, home: Path, database: dict[str, str], **settings: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PMW_", "DAGSTER_"))}
    env.update(
        {
            "DAGSTER_HOME": str(home),
            **database,
            "DAGSTER_DISABLE_TELEMETRY": "1",
            "PMW_SOURCE": "api",
            "PMW_API_URL": api_url,
            "PMW_API_KEY": SECRET,
            "PMW_DATA_DIR": str(tmp_path / "data"),
            "PMW_RATE_LIMIT_DB": str(tmp_path / "budget.sqlite"),
            **strict_budget_env(),
            "PMW_BACKFILL_INTERVAL_S": str(BACKFILL_INTERVAL_S),
            **settings,
        }
    )
    return env


def _dagster_cli(env: dict[str, str], *args: str) -> None:
    done = subprocess.run(
        [str(BIN / "dagster"), *args], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr


def _start_daemon(env: dict[str, str], workspace: Path, tmp_path: Path, log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(
            [str(BIN / "dagster-daemon"), "run", "-w", str(workspace)],
            env=env,
            cwd=tmp_path,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


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


def _runs(instance: dg.DagsterInstance, **tags: str) -> list[dg.RunRecord]:
    return list(instance.get_run_records(filters=dg.RunsFilter(tags=tags)))


def _switched_on_before_this_minute(instance: dg.DagsterInstance) -> datetime:
    """The whole minute now begun (the night's tick), with the daily schedule's recorded start moved to just before
    it. The state's classes are Dagster's internals: no public API moves a schedule's start."""
    from dagster._core.scheduler.instigation import InstigatorType, ScheduleInstigatorData

    tick = datetime.now(UTC).replace(second=0, microsecond=0)
    (state,) = [s for s in instance.all_instigator_state(instigator_type=InstigatorType.SCHEDULE)
                if s.instigator_name == "daily_ingestion"]
    recorded = state.instigator_data
    assert isinstance(recorded, ScheduleInstigatorData)
    instance.update_instigator_state(state.with_data(
        ScheduleInstigatorData(recorded.cron_schedule, start_timestamp=tick.timestamp() - 1)))
    return tick


def _wait_for_the_night(
    instance: dg.DagsterInstance, daemon: subprocess.Popen[bytes], log: Path, night: date
) -> list[dg.RunRecord]:
    """Wait until the night's runs have landed and a rebuild that started after the last of them has succeeded;
    the rebuild runs."""
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        assert daemon.poll() is None, f"the daemon exited:\n{log.read_text()[-3000:]}"
        failed = instance.get_runs(filters=dg.RunsFilter(statuses=[dg.DagsterRunStatus.FAILURE]))
        assert not failed, f"runs failed: {[(r.job_name, r.tags.get('dagster/partition')) for r in failed]}"
        nightly = _runs(instance, **{"pmw/trigger": DAILY_TRIGGER})
        rebuilds = _runs(instance, **{"dagster/sensor_name": REBUILD_SENSOR})
        landed = [r.end_time for r in nightly if r.dagster_run.status == dg.DagsterRunStatus.SUCCESS and r.end_time]
        if len(landed) == len(PLATFORMS) and any(
            r.dagster_run.status == dg.DagsterRunStatus.SUCCESS and r.create_timestamp.timestamp() >= max(landed)
            for r in rebuilds
        ):
            return rebuilds
        time.sleep(1)
    pytest.fail(f"the night of {night} did not land and rebuild the marts within {DEADLINE_S} s; daemon log:\n"
                f"{log.read_text()[-3000:]}")


def _platform_daily(data_dir: Path) -> dict[tuple[str, date], tuple[int, int]]:
    """(platform, day) -> (trades in marts.platform_daily, trades in staging.stg_trades), from the warehouse."""
    with duckdb.connect(str(data_dir / "warehouse.duckdb"), read_only=True) as warehouse:
        rows = warehouse.execute(
            "SELECT platform, day, trades, (SELECT count(*) FROM staging.stg_trades t "
            "WHERE t.platform = d.platform AND t.trade_date = d.day) FROM marts.platform_daily d"
        ).fetchall()
    return {(platform, day): (mart, staged) for platform, day, mart, staged in rows}


def _row_counts(instance: dg.DagsterInstance, key: dg.AssetKey) -> dict[str, int]:
    """run id -> the row count that run's materialisation of `key` recorded."""
    records = instance.fetch_materializations(key, limit=100).records
    return {
        r.run_id: int(r.asset_materialization.metadata["dagster/row_count"].value)  # type: ignore[union-attr]
        for r in records
    }


def _landing_times(instance: dg.DagsterInstance) -> list[float]:
    """When each ingestion table's materialisation was recorded: the clock the marts' sensor settles on."""
    return [r.timestamp for name in ASSET_NAMES for r in instance.fetch_materializations(dg.AssetKey(name),
                                                                                       limit=1000).records]


@pytest.mark.slow
def test_a_night_backfill_then_schedule_inside_the_strict_budget_and_the_marts_rebuild_once(
    dagster_database: dict[str, str], tmp_path: Path
) -> None:
    home = _dagster_home(tmp_path)
    workspace = _workspace(tmp_path)
    log = tmp_path / "daemon.log"
    # The instance's storages are created here, before the daemon and the CLI open them side by side.
    with dg.DagsterInstance.from_config(str(home)) as instance:
        # Switching the schedule on reads no API: the URL can wait for the world, which needs the night.
        _dagster_cli(_env("http://127.0.0.1:9", tmp_path, home, dagster_database), "schedule", "start",
                     "daily_ingestion", "-w", str(workspace))
        tick = _switched_on_before_this_minute(instance)
        night = tick.date() - timedelta(days=1)  # the schedule's yesterday
        window = {PartitionRef(night - timedelta(days=1), p) for p in PLATFORMS}  # the backfill sensor's
        # Three times the markets of the strict-budget world: the window's two partitions take about 126 requests,
        # more than one rate window's budget, in two runs (each run is a process that loads the definitions).
        world = replace(strict_budget_world(night), markets_per_event=15)
        app = SandboxApp(strict_config(world=world, api_keys=(SECRET,)))
        with LoopbackServer(app) as server:
            env = _env(server.url, tmp_path, home, dagster_database, **{
                "PMW_BACKFILL_START": (night - timedelta(days=1)).isoformat(),
                "PMW_DAILY_AT": f"{tick:%H:%M}",
                "PMW_LOOKBACK_DAYS": "0",  # one run a platform: the night is two partitions
                "PMW_MARTS_INTERVAL_S": "1",
            })
            daemon = _start_daemon(env, workspace, tmp_path, log)
            try:
                _dagster_cli(env, "sensor", "start", "backfill_sensor", "-w", str(workspace))
                rebuilds = _wait_for_the_night(instance, daemon, log, night)
                time.sleep(3)  # three looks of the rebuild sensor more: the night is not rebuilt twice
                rebuilds = _runs(instance, **{"dagster/sensor_name": REBUILD_SENSOR})
                backfilled = _runs(instance, **{"pmw/trigger": BACKFILL_TRIGGER})
                nightly = _runs(instance, **{"pmw/trigger": DAILY_TRIGGER})
                pools = {limit.name: limit.limit for limit in instance.event_log_storage.get_pool_limits()}
                rows = _row_counts(instance, dg.AssetKey(["marts", "platform_daily"]))
                landed = _landing_times(instance)
            finally:
                _stop(daemon)
        marts = _platform_daily(Path(env["PMW_DATA_DIR"]))
    # The backfill sensor filled the day before inside the budget, one run at a time, and left the night alone.
    assert {PartitionRef.parse(r.dagster_run.tags["dagster/partition"]) for r in backfilled} == window
    assert {PartitionRef.parse(r.dagster_run.tags["dagster/partition"]) for r in nightly} == {
        PartitionRef(night, p) for p in PLATFORMS
    }
    assert pools == {"unified_api": 1, "platform_apis": 1}
    assert type(instance.run_storage).__name__ == "PostgresRunStorage"
    ingestion = backfilled + nightly
    spans = sorted((r.start_time, r.end_time) for r in ingestion if r.start_time and r.end_time)
    assert all(end <= next_start for (_, end), (next_start, _) in pairwise(spans)), (
        "the unified_api pool admits one run at a time"
    )
    assert app.requests_served > STRICT_BUDGET, "the window must need more than one rate window's budget"
    assert app.rate_limited_answers == 0, "the strict budget of 100 requests per rate window was exceeded"
    # The marts rebuilt themselves only when nothing was landing and nothing had landed for two ticks of the backfill
    # sensor (SETTLE_S): once after the night, whichever of the backfill's partitions came after it.
    for rebuild in rebuilds:
        created = rebuild.create_timestamp.timestamp()
        assert not any(r.create_timestamp.timestamp() <= created < (r.end_time or 0) for r in ingestion), (
            "a rebuild was asked for while an ingestion run was queued or running"
        )
        assert created - max(t for t in landed if t <= created) >= SETTLE_S, (
            "a rebuild was asked for before the ingestion settled"
        )
    night_landed = max(r.end_time or 0 for r in nightly)
    last = max(rebuilds, key=lambda r: r.create_timestamp)
    assert last.create_timestamp.timestamp() >= max(r.end_time or 0 for r in ingestion) >= night_landed
    assert len([r for r in rebuilds if r.create_timestamp.timestamp() >= night_landed]) == 1, (
        "the night's two partitions are followed by one rebuild, not one each"
    )
    # Its row count follows the days: two platforms a day, the night's included.
    assert rows[last.dagster_run.run_id] == 4
    assert set(marts) == {(p, d) for p in PLATFORMS for d in (night - timedelta(days=1), night)}
    assert all(mart == staged > 0 for mart, staged in marts.values()), marts
