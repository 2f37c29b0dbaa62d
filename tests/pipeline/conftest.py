from __future__ import annotations

from collections.abc import Iterator
from datetime import date
from pathlib import Path

import dagster as dg
import polars as pl
import pytest

from pipeline.assets.ingest import INGESTION_ASSETS
from pipeline.lake import Lake
from pipeline.resources import PipelineResource
from pipeline.schema import TABLES
from pipeline.sources.factory import sandbox_app
from tests.conftest import WORLD

DAY = WORLD.end  # the world's last day
assert DAY is not None


@pytest.fixture
def pipeline_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A private data dir and budget, the in-process sandbox of the test world, fast retries."""
    for name in ("PMW_API_URL", "PMW_API_KEY", "PMW_PLATFORMS", "PMW_SANDBOX_FAULTS", "DAGSTER_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PMW_SOURCE", "sandbox")
    monkeypatch.setenv("PMW_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("PMW_SANDBOX_SEED", str(WORLD.seed))
    monkeypatch.setenv("PMW_SANDBOX_END", DAY.isoformat())
    monkeypatch.setenv("PMW_RATE_LIMIT_DB", str(tmp_path / "budget.sqlite"))
    monkeypatch.setenv("PMW_MAX_BACKOFF_S", "0.01")
    sandbox_app.cache_clear()
    yield tmp_path / "data"
    sandbox_app.cache_clear()


def materialise(
    platform: str,
    day: date = DAY,
    assets: list[str] | None = None,
    instance: dg.DagsterInstance | None = None,
    **resource: str,
) -> dg.ExecuteInProcessResult:
    chosen = [a for a in INGESTION_ASSETS if assets is None or a.key.to_user_string() in assets]
    return dg.materialize(
        chosen,
        partition_key=dg.MultiPartitionKey({"platform": platform, "date": day.isoformat()}),
        resources={"pipeline": PipelineResource(**resource)},
        instance=instance or dg.DagsterInstance.ephemeral(),
        raise_on_error=False,
    )


def lake_tables(data_dir: Path, platform: str, day: date = DAY) -> dict[str, pl.DataFrame]:
    """Every table of a partition, without the fetch time (which differs run to run)."""
    lake = Lake(data_dir / "lake")
    frames = {}
    for table in TABLES:
        frame = lake.read_partition(table, platform, day)
        assert frame is not None, f"{table} {platform} {day} did not land"
        frames[table] = frame.drop("_fetched_at")
    return frames
