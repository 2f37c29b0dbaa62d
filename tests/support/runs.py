from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from datetime import date
from functools import cache
from pathlib import Path

import dagster as dg
import polars as pl
from dagster._core.remote_origin import InProcessCodeLocationOrigin, RemoteRepositoryOrigin
from dagster._core.types.loadable_target_origin import LoadableTargetOrigin

from pipeline.defs.common.resources import PipelineResource
from pipeline.engine.lake.store import Lake
from pipeline.engine.schema import TABLES
from tests.support.location import INGESTION_ASSETS
from tests.support.world import PIPELINE_WORLD

DAY = PIPELINE_WORLD.end  # the world's last day
assert DAY is not None
# Where a queued run comes from (Dagster requires one on queued runs; the run queue launches from it).
CODE_LOCATION = RemoteRepositoryOrigin(
    InProcessCodeLocationOrigin(LoadableTargetOrigin(module_name="pipeline.definitions")), "__repository__"
)


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
    tags: dict[str, str] | None = None,
    **resource: str,
) -> dg.ExecuteInProcessResult:
    chosen = [a for a in INGESTION_ASSETS if assets is None or a.key.to_user_string() in assets]
    return dg.materialize(
        chosen,
        partition_key=dg.MultiPartitionKey({"platform": platform, "date": day.isoformat()}),
        resources={"pipeline": PipelineResource(**resource)},
        instance=instance or shared_instance(),
        raise_on_error=False,
        tags=tags,
    )


@dataclass
class DirectRun:
    """What `land_directly` did: per asset, its check results, or the error it raised (or that it was skipped)."""

    checks: dict[str, dg.AssetCheckResult] = field(default_factory=dict)  # "table.check" -> result
    metadata: dict[str, Mapping[str, object]] = field(default_factory=dict)  # table -> its materialisation's
    landed: set[str] = field(default_factory=set)
    errors: dict[str, BaseException] = field(default_factory=dict)
    skipped: set[str] = field(default_factory=set)

    @property
    def success(self) -> bool:
        return not self.errors and not self.skipped

    def failures(self) -> str:
        """What the failed assets raised, with the exceptions behind each."""
        said = []
        for error in self.errors.values():
            cause: BaseException | None = error
            while cause is not None:
                said.append(f"{type(cause).__name__}: {cause}".strip())
                cause = cause.__cause__ or cause.__context__
        return " | ".join(said)


def land_directly(platform: str, day: date = DAY, assets: Collection[str] | None = None) -> DirectRun:
    """The five ingestion assets of one partition (or those named in `assets`) invoked directly, as a run's steps
    would be, without a Dagster run around them: `markets` first, the others after it unless it failed (in a run
    they would be skipped).

    For the suites that land a partition dozens of times to see what the pipeline makes of a fault or a reading
    of the spec: a Dagster run adds about half a second of its own each time. What a run itself does (steps,
    events, retries) is tested through `materialise` elsewhere.
    """
    key = dg.MultiPartitionKey({"platform": platform, "date": day.isoformat()})
    run = DirectRun()
    chosen = [a for a in INGESTION_ASSETS if assets is None or a.key.to_user_string() in assets]
    for asset in sorted(chosen, key=lambda a: a.key.to_user_string() != "markets"):
        name = asset.key.to_user_string()
        if name != "markets" and "markets" in run.errors:
            run.skipped.add(name)
            continue
        with dg.build_asset_context(partition_key=key, resources={"pipeline": PipelineResource()},
                                    instance=shared_instance()) as context:
            try:
                for result in asset(context):
                    if isinstance(result, dg.AssetCheckResult):
                        run.checks[f"{name}.{result.check_name}"] = result
                    elif isinstance(result, dg.MaterializeResult):
                        run.metadata[name] = result.metadata or {}
            except Exception as error:  # the step's failure, kept to be looked at as a run's would be
                run.errors[name] = error
                continue
        run.landed.add(name)
    return run


def lake_tables(data_dir: Path, platform: str, day: date = DAY) -> dict[str, pl.DataFrame]:
    """Every table of a partition, without the fetch time (which differs run to run)."""
    lake = Lake(data_dir / "lake")
    frames = {}
    for table in TABLES:
        frame = lake.read_partition(table, platform, day)
        assert frame is not None, f"{table} {platform} {day} did not land"
        frames[table] = frame.drop("_fetched_at")
    return frames
