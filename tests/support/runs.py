from __future__ import annotations

from datetime import date
from functools import cache
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


@cache
def shared_instance() -> dg.DagsterInstance:
    """One throwaway instance per test process, for the runs whose instance no test reads.

    A fresh ephemeral instance costs a tenth of a second to create and makes its first run compile every
    SQL statement of its storages again (SQLAlchemy caches them per engine): about a quarter of a second
    a run in all, over some hundred runs a worker. What a test checks of a run it reads from the run's
    result, which holds that run's events alone; a test that reads the instance itself creates its own.
    """
    return dg.DagsterInstance.ephemeral()


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
        instance=instance or shared_instance(),
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
