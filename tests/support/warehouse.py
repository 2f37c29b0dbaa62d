"""Where the SQL build leaves its files in a local lake, for the tests that look at them."""

from pathlib import Path

from pipeline.engine.lake.store import Lake
from pipeline.engine.warehouse.build import MODELS_DIR


def models_dir(lake_dir: Path) -> Path:
    """Where table models land in a local lake (`<lake>/_models`), where the build also keeps its writer lock."""
    return Lake(lake_dir).root / MODELS_DIR


def model_files(lake_dir: Path, schema: str, name: str) -> list[Path]:
    """The files of a table model in every build folder the lake keeps (`<lake>/_models/build-<id>/`)."""
    return sorted(models_dir(lake_dir).glob(f"build-*/{schema}/{name}.parquet"))
