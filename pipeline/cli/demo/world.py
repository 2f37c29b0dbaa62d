"""What `pmw demo` sets up before Dagster's definitions are loaded: the sandbox world wide enough for the days
asked for, the environment naming that world (the daily partitions start at its first day), and a Dagster home
under the data directory, so that `dagster dev` on it shows the demo's runs."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path

from filelock import FileLock

from pipeline.cli.common.dagster_home import DATA_DIR_HOME
from pipeline.cli.common.instance import INIT_LOCK
from pipeline.engine.config import Settings
from pmw_sandbox.catalogue import WorldConfig

PROJECT_INSTANCE_SETTINGS = Path(__file__).resolve().parents[3] / "dagster.yaml"


def demo_world(world: WorldConfig, days: int, say: Callable[[str], None] = print) -> WorldConfig:
    """The world, widened to `days` days of history when the demo asks for more days than it holds."""
    if days <= world.days:
        return world
    say(f"pmw demo: the sandbox world holds {world.days} day(s); widened to {days} so that every day has trades")
    return replace(world, days=days)


def world_env(world: WorldConfig) -> dict[str, str]:
    """The variables that name the in-process sandbox's world."""
    return {"PMW_SANDBOX_SEED": str(world.seed), "PMW_SANDBOX_END": world.end_day.isoformat(),
            "PMW_SANDBOX_DAYS": str(world.days)}


def demo_dagster_home(env: Mapping[str, str]) -> Path:
    """DAGSTER_HOME when set, else <PMW_DATA_DIR>/dagster_home, made once (under pmw's instance lock) with the
    project's instance settings (dagster.yaml, when this is a checkout of the project)."""
    if env.get("DAGSTER_HOME"):
        return Path(env["DAGSTER_HOME"])
    home = (Path(env.get("PMW_DATA_DIR") or Settings.data_dir) / DATA_DIR_HOME).resolve()
    home.mkdir(parents=True, exist_ok=True)
    with FileLock(home / INIT_LOCK):
        settings = home / "dagster.yaml"
        if not settings.exists() and PROJECT_INSTANCE_SETTINGS.is_file():
            shutil.copyfile(PROJECT_INSTANCE_SETTINGS, settings)
    return home


def prepare_demo_environment(world: WorldConfig) -> Path:
    """Set this process's environment for the demo: its world (which the partitions are defined from when the
    definitions load) and its Dagster home; the home is returned."""
    home = demo_dagster_home(os.environ)
    os.environ.update({**world_env(world), "DAGSTER_HOME": str(home)})
    return home


def ui_command(world: WorldConfig, home: Path) -> str:
    """The command that opens Dagster's UI on the demo's runs, with the world's variables that are not the
    defaults (so that the UI's partitions are the demo's days)."""
    defaults = world_env(WorldConfig())
    changed = [f"{name}={value}" for name, value in world_env(world).items() if defaults[name] != value]
    return " ".join([f"DAGSTER_HOME={home}", *changed, "dagster dev -m pipeline.definitions"])
