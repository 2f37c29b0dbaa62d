"""The Dagster instance that `pmw` commands record their runs in."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
from filelock import FileLock

from pipeline.engine.config import dagster_home

INIT_LOCK = ".pmw-instance.lock"  # in DAGSTER_HOME


def pmw_instance() -> dg.DagsterInstance:
    """DAGSTER_HOME's instance when it is set (runs then show in the UI), else a throwaway one.

    Dagster creates an instance's SQLite storages when the instance is first opened, and two processes doing
    that at once on a fresh DAGSTER_HOME can leave `runs.db` with two alembic heads, after which every `pmw`
    and `dagster` command on that home fails (a known race of Dagster's SQLite storage). So `pmw` opens the
    instance under a file lock in DAGSTER_HOME: the first opener creates the storages while the others wait,
    then find them made. (A DAGSTER_HOME that is not a directory is left to Dagster to report.)
    """
    home = dagster_home()
    if home is None:
        return dg.DagsterInstance.ephemeral()
    if not home.is_dir():
        return dg.DagsterInstance.get()
    return instance_at(home)


def instance_at(home: Path) -> dg.DagsterInstance:
    """The instance of the Dagster home directory `home` (not DAGSTER_HOME's), opened under the same lock."""
    with FileLock(home / INIT_LOCK):
        return dg.DagsterInstance.from_config(str(home))
