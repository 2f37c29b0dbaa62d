"""What `pmw demo` sets up before it runs: the sandbox world wide enough for the days asked for, the variables
naming that world (its settings' daily partitions start at its first day), and the command that opens Dagster's
UI on the demo's runs."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from pmw_sandbox.catalogue import WorldConfig


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


def ui_command(world: WorldConfig, home: Path) -> str:
    """The command that opens Dagster's UI on the demo's runs, with the world's variables that are not the
    defaults (so that the UI's partitions are the demo's days)."""
    defaults = world_env(WorldConfig())
    changed = [f"{name}={value}" for name, value in world_env(world).items() if defaults[name] != value]
    return " ".join([f"DAGSTER_HOME={home}", *changed, "dagster dev -m pipeline.definitions"])
