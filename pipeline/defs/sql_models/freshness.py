"""The SQL models keep themselves fresh: one rebuild after ingestion has landed and gone quiet.

The sensor ``sql_models_after_ingestion`` looks every PMW_MARTS_INTERVAL_S seconds (on from the start: a rebuild
spends no API request). The models are stale when an ingestion table they read has a materialisation newer
than the oldest of their own latest builds. While a run that lands more (queued or running, whoever launched
it: the schedule, the backfill sensor, a backfill from the UI, `pmw backfill`) or a backfill from the UI is
under way, it waits; once none is, it asks for one run of every model. The schedule's six runs of a night or a
backfill's hundreds therefore end in one rebuild, not one per partition (or per asset of a partition, which is
what Dagster's eager automation condition would do: it looks at each dependency on its own). The run key names
the newest landed materialisation, so the same state is never rebuilt twice, even when a model keeps failing.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import dagster as dg
from dagster._core.execution.backfill import BulkActionStatus

from pipeline.defs.automation.jobs import INGESTION_JOB
from pipeline.engine.config import AutomationSettings

SENSOR_NAME = "sql_models_after_ingestion"
TRIGGER = "after_ingestion"
UNFINISHED = (
    dg.DagsterRunStatus.NOT_STARTED,
    dg.DagsterRunStatus.QUEUED,
    dg.DagsterRunStatus.STARTING,
    dg.DagsterRunStatus.STARTED,
    dg.DagsterRunStatus.CANCELING,
)


@dataclass(frozen=True)
class Observed:
    """What the sensor sees of the instance on a tick."""

    newest_landed: int | None  # storage id of the newest materialisation of an ingestion table the models read
    oldest_build: int | None  # the oldest of the models' latest materialisations; None while one was never built
    ingesting: int  # runs and backfills that may land more, queued or under way


def decide(observed: Observed) -> dg.RunRequest | dg.SkipReason:
    """One rebuild of every model once what landed is newer than a build and nothing more is landing."""
    newest, oldest = observed.newest_landed, observed.oldest_build
    if newest is None:
        return dg.SkipReason("nothing has landed yet")
    if oldest is not None and oldest > newest:
        return dg.SkipReason("the models are newer than everything that has landed")
    if observed.ingesting:
        return dg.SkipReason(
            f"waiting: {observed.ingesting} run(s) or backfill(s) that land ingestion tables are queued or running"
        )
    return dg.RunRequest(run_key=f"{TRIGGER}:{newest}", tags={"pmw/trigger": TRIGGER})


def observe(instance: dg.DagsterInstance, ingested: Sequence[dg.AssetKey], models: Sequence[dg.AssetKey]) -> Observed:
    landed = _latest_storage_ids(instance, ingested)
    built = _latest_storage_ids(instance, models)
    return Observed(
        newest_landed=max((s for s in landed if s is not None), default=None),
        oldest_build=None if None in built else min(built, default=None),  # type: ignore[type-var]
        ingesting=_runs_landing(instance, set(ingested))
        + len(instance.get_backfills(status=BulkActionStatus.REQUESTED)),
    )


def _latest_storage_ids(instance: dg.DagsterInstance, keys: Iterable[dg.AssetKey]) -> list[int | None]:
    keys = list(keys)
    records = {record.asset_entry.asset_key: record.asset_entry for record in instance.get_asset_records(keys)}
    ids: list[int | None] = []
    for key in keys:
        entry = records.get(key)
        latest = entry.last_materialization_record if entry else None
        ids.append(latest.storage_id if latest else None)
    return ids


def _runs_landing(instance: dg.DagsterInstance, ingested: set[dg.AssetKey]) -> int:
    runs = instance.get_runs(filters=dg.RunsFilter(statuses=list(UNFINISHED)))
    return sum(
        run.job_name == INGESTION_JOB or bool(run.asset_selection and run.asset_selection & ingested) for run in runs
    )


def rebuild_sensor(assets: Sequence[dg.AssetsDefinition]) -> dg.SensorDefinition:
    """The sensor over the SQL models `assets`, watching the ingestion tables they read."""
    models = sorted({key for asset in assets for key in asset.keys})
    ingested = sorted({dep.asset_key for asset in assets for spec in asset.specs for dep in spec.deps} - set(models))

    @dg.sensor(
        name=SENSOR_NAME,
        target=dg.AssetSelection.assets(*assets),
        minimum_interval_seconds=AutomationSettings.from_env().marts_interval_s,
        default_status=dg.DefaultSensorStatus.RUNNING,
        description="Rebuilds every SQL model once, after ingestion tables have landed and no run or backfill that "
        "lands more is queued or running (every PMW_MARTS_INTERVAL_S seconds; it spends no API request).",
    )
    def sql_models_after_ingestion(context: dg.SensorEvaluationContext) -> dg.RunRequest | dg.SkipReason:
        return decide(observe(context.instance, ingested, models))

    return sql_models_after_ingestion
