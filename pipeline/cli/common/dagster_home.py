"""Which Dagster home holds a data dir's runs (without importing Dagster: `pmw status` reads it first).

Every `pmw` command that records or reads runs uses DAGSTER_HOME when it is set, else the data dir's own home,
`<PMW_DATA_DIR>/dagster_home`, so that Dagster's UI, its sensors and `pmw status` see every run.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from filelock import FileLock

from pipeline.engine.config import dagster_home

DATA_DIR_HOME = "dagster_home"  # under PMW_DATA_DIR: where `pmw` records its runs when DAGSTER_HOME is not set
INIT_LOCK = ".pmw-instance.lock"  # in the Dagster home: its first opener creates the storages while others wait
# The project's instance settings (pools, run monitoring, no telemetry): package data, in a checkout and a wheel alike
PROJECT_INSTANCE_SETTINGS = resources.files("pipeline.defs") / "dagster.yaml"


def pmw_dagster_home(data_dir: Path) -> Path:
    """DAGSTER_HOME when set, else <data_dir>/dagster_home, made once (under the instance lock) with the
    project's instance settings (pipeline/defs/dagster.yaml)."""
    home = dagster_home()
    if home is not None:
        return home
    home = (data_dir / DATA_DIR_HOME).resolve()
    home.mkdir(parents=True, exist_ok=True)
    with FileLock(home / INIT_LOCK):
        settings = home / "dagster.yaml"
        if not settings.exists():
            settings.write_bytes(PROJECT_INSTANCE_SETTINGS.read_bytes())
    return home


def data_dir_home(data_dir: Path) -> Path | None:
    """The data dir's own Dagster home, when a `pmw` command made one and DAGSTER_HOME is not set; else None
    (for commands that only read, and so make nothing)."""
    home = data_dir / DATA_DIR_HOME
    return home.resolve() if dagster_home() is None and home.is_dir() else None
