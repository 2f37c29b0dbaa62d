"""Which Dagster home holds a data dir's runs (without importing Dagster: `pmw status` reads it first)."""

from __future__ import annotations

from pathlib import Path

from pipeline.engine.config import dagster_home

DATA_DIR_HOME = "dagster_home"  # under PMW_DATA_DIR: where `pmw demo` records its runs when DAGSTER_HOME is not set


def data_dir_home(data_dir: Path) -> Path | None:
    """The data dir's own Dagster home, when `pmw demo` made one and DAGSTER_HOME is not set; else None."""
    home = data_dir / DATA_DIR_HOME
    return home.resolve() if dagster_home() is None and home.is_dir() else None
