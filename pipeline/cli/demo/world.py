"""What `pmw demo` sets up before it runs: the sandbox world wide enough for the days asked for, the variables
naming that world (its settings' daily partitions start at its first day), and a Dagster home under the data
directory, so that `dagster dev` on it shows the demo's runs."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from filelock import FileLock

from pipeline.cli.common.dagster_home import DATA_DIR_HOME
from pipeline.cli.common.instance import INIT_LOCK
from pipeline.engine.config import dagster_home
from pmw_sandbox.catalogue import WorldConfig

PROJECT_INSTANCE_SETTINGS = Path(__file__).resolve().parents[3] / "deploy" / "dagster.yaml"


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


def demo_dagster_home(data_dir: Path) -> Path:
    """DAGSTER_HOME when set, else <data_dir>/dagster_home, made once (under pmw's instance lock) with the
    project's instance settings (deploy/dagster.yaml, when this is a checkout of the project)."""
    home = dagster_home()
    if home is not None:
        return home
    home = (data_dir / DATA_DIR_HOME).resolve()
    home.mkdir(parents=True, exist_ok=True)
    with FileLock(home / INIT_LOCK):
        settings = home / "dagster.yaml"
        if not settings.exists() and PROJECT_INSTANCE_SETTINGS.is_file():
            shutil.copyfile(PROJECT_INSTANCE_SETTINGS, settings)
    return home


def ui_command(world: WorldConfig, home: Path) -> str:
    """The command that opens Dagster's UI on the demo's runs, with the world's variables that are not the
    defaults (so that the UI's partitions are the demo's days)."""
    defaults = world_env(WorldConfig())
    changed = [f"{name}={value}" for name, value in world_env(world).items() if defaults[name] != value]
    return " ".join([f"DAGSTER_HOME={home}", *changed, "dagster dev -m pipeline.definitions"])
