"""The Dagster instance that `pmw` commands record their runs in, and whether a daemon is at work on it."""

from __future__ import annotations

import time
from pathlib import Path

import dagster as dg
from dagster._core.instance.ref import InstanceRef  # not exported: the settings read, to swap the SQLite storage
from dagster._serdes import ConfigurableClassData  # not exported: how an InstanceRef names a class it builds

from pipeline.cli.common.dagster_home import INIT_LOCK, pmw_dagster_home
from pipeline.cli.common.sqlite_storage import BATCHING_INSTANCE, kept_engine_storage
from pipeline.defs.automation.jobs import register_api_pools
from pipeline.engine.locks import held

# The runs pmw executes in its own process record Dagster's events but not their steps' raw stdout and stderr:
# Dagster's capture mirrors them to the terminal through `tail` and a Python watcher process in the terminal's
# process group, which a Ctrl-C reaches too and which then prints a KeyboardInterrupt traceback.
NO_CAPTURED_LOGS = ConfigurableClassData("dagster._core.storage.noop_compute_log_manager", "NoOpComputeLogManager",
                                         "{}\n")
INIT_WAIT_S = 300.0  # the longest wait for another process setting the home's storages up (seconds, at most)
SENSOR_DAEMON = "SENSOR"  # the daemon type whose heartbeats say that sensors (the marts' rebuild) are evaluated
DAEMON_ALIVE_S = 120.0  # a heartbeat this recent means a running daemon (it beats every 30 s)


def pmw_instance(data_dir: Path) -> dg.DagsterInstance:
    """DAGSTER_HOME's instance when it is set, else the data dir's own (`pmw_dagster_home`, made on first use), so
    that Dagster's UI, its sensors and `pmw status` see every run.

    Dagster creates an instance's SQLite storages when the instance is first opened, and two processes doing
    that at once on a fresh home can leave `runs.db` with two alembic heads, after which every `pmw` and
    `dagster` command on that home fails (a known race of Dagster's SQLite storage). So `pmw` opens the
    instance under a file lock in the home: the first opener creates the storages while the others wait,
    then find them made. (A DAGSTER_HOME that is not a directory is left to Dagster to report.)
    """
    home = pmw_dagster_home(data_dir)
    if not home.is_dir():
        return dg.DagsterInstance.get()
    return instance_at(home)


def instance_at(home: Path) -> dg.DagsterInstance:
    """The instance of the Dagster home directory `home`, opened under pmw's lock, its API pools listed (at the
    limit its settings give every pool) from the first use, before any run or sensor needs them. Dagster's
    default SQLite storage is opened as KeptEngineSqliteStorage (pipeline.cli.common.sqlite_storage): the same
    files, at less cost per event; its runs' steps' raw output is not captured (NO_CAPTURED_LOGS). Unless the home's
    settings name an instance class of their own, the instance is a BatchingInstance, which stores the events a run
    plans in one transaction."""
    with held(home / INIT_LOCK, f"the Dagster home {home}'s set-up", INIT_WAIT_S, setting=None):
        ref = InstanceRef.from_dir(str(home))
        instance = dg.DagsterInstance.from_ref(ref._replace(
            storage_data=kept_engine_storage(ref.storage_data), compute_logs_data=NO_CAPTURED_LOGS,
            custom_instance_class_data=ref.custom_instance_class_data or BATCHING_INSTANCE))
        register_api_pools(instance)
    return instance


def sensor_daemon_running(instance: dg.DagsterInstance, now: float | None = None) -> bool:
    """Whether a Dagster daemon evaluates the sensors of `instance`: its sensor daemon's latest heartbeat is
    younger than DAEMON_ALIVE_S seconds at `now` (default: the present)."""
    heartbeat = instance.get_daemon_heartbeats().get(SENSOR_DAEMON)
    return heartbeat is not None and (now or time.time()) - heartbeat.timestamp < DAEMON_ALIVE_S
