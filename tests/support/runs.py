from __future__ import annotations

from datetime import date
from pathlib import Path

import dagster as dg
import polars as pl

from pipeline.defs.ingestion.assets import INGESTION_ASSETS
from pipeline.defs.resources import PipelineResource
from pipeline.engine.lake.store import Lake
from pipeline.engine.schema import TABLES
from tests.support.world import PIPELINE_WORLD

DAY = PIPELINE_WORLD.end  # the world's last day
assert DAY is not None


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
