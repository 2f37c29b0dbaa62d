"""The SQL models keep themselves fresh: one rebuild after ingestion has landed and gone quiet.

The sensor ``sql_models_after_ingestion`` looks every PMW_MARTS_INTERVAL_S seconds (on from the start: a rebuild
spends no API request). The models are stale when an ingestion table they read has a materialisation newer
than the oldest of their own latest builds. While a run that lands more (queued or running, whoever launched
it: the schedule, the backfill sensor, a backfill from the UI, `pmw backfill`) or a backfill from the UI is
under way, it waits; and when the newest landing is a run of the backfill sensor, it waits until that landing is
two ticks of the sensor old, since the sensor feeds the queue a tick at a time and may leave it empty between two
ticks (a landing of anything else, the sensor off by default, waits for no tick of it). Then it asks for one run of
every model. The schedule's six runs of a night or a backfill's hundreds therefore end in one rebuild, not one
per partition (or per asset of a partition, which is what Dagster's eager automation condition would do: it
looks at each dependency on its own). The run key names the newest landed materialisation, so the same state is
never rebuilt twice, even when a model keeps failing.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import dagster as dg
from dagster._core.execution.backfill import BulkActionStatus  # not exported, yet what get_backfills(status=) takes

from pipeline.defs.automation.sensor import BACKFILL_TRIGGER
from pipeline.defs.common.tags import TRIGGER_TAG
from pipeline.engine.config import Settings

SENSOR_NAME = "sql_models_after_ingestion"
MODELS_JOB = "sql_models"  # the job of every model's build: the sensor's, and `pmw sql`'s (listed under it in the UI)
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
    ingesting: int  # runs (other than builds of the models) and UI backfills queued or under way
    quiet_s: float = float("inf")  # seconds since the newest materialisation of an ingestion table
    fed_by_backfill_sensor: bool = False  # that materialisation is a run of the backfill sensor's, which may add more


def decide(observed: Observed, settle_s: float) -> dg.RunRequest | dg.SkipReason:
    """One rebuild of every model once what landed is newer than a build and nothing more is landing; when the
    backfill sensor landed the newest, once nothing has landed for `settle_s` seconds too (it may queue more)."""
    newest, oldest = observed.newest_landed, observed.oldest_build
    if newest is None:
        return dg.SkipReason("nothing has landed yet")
    if oldest is not None and oldest > newest:
        return dg.SkipReason("the models are newer than everything that has landed")
    if observed.ingesting:
        return dg.SkipReason(
            f"waiting: {observed.ingesting} run(s) or backfill(s) that land ingestion tables are queued or running"
        )
    if observed.fed_by_backfill_sensor and observed.quiet_s < settle_s:
        return dg.SkipReason(
            f"waiting: the newest partition landed {observed.quiet_s:.0f} s ago; the backfill sensor may queue more "
            f"within {settle_s:.0f} s (two of its ticks)"
        )
    return dg.RunRequest(run_key=f"{TRIGGER}:{newest}", tags={TRIGGER_TAG: TRIGGER})


def observe(
    instance: dg.DagsterInstance, ingested: Sequence[dg.AssetKey], models: Sequence[dg.AssetKey], now: float
) -> Observed:
    """What the instance says at `now` (a POSIX timestamp)."""
    landed = [record for record in _latest_records(instance, ingested) if record is not None]
    built = [record.storage_id if record else None for record in _latest_records(instance, models)]
    newest = max(landed, key=lambda record: record.storage_id, default=None)
    return Observed(
        newest_landed=newest.storage_id if newest else None,
        oldest_build=None if None in built else min(built, default=None),  # type: ignore[type-var]
        ingesting=_runs_landing(instance, set(models))
        + len(instance.get_backfills(status=BulkActionStatus.REQUESTED)),
        quiet_s=now - newest.timestamp if newest else float("inf"),
        fed_by_backfill_sensor=newest is not None and _triggered_by(instance, newest.run_id) == BACKFILL_TRIGGER,
    )


def _triggered_by(instance: dg.DagsterInstance, run_id: str) -> str | None:
    """Who asked for the run (its TRIGGER_TAG); None for an event no run of the instance recorded."""
    run = instance.get_run_by_id(run_id) if run_id else None
    return run.tags.get(TRIGGER_TAG) if run else None


def _latest_records(instance: dg.DagsterInstance, keys: Iterable[dg.AssetKey]) -> list[dg.EventLogRecord | None]:
    keys = list(keys)
    entries = {record.asset_entry.asset_key: record.asset_entry for record in instance.get_asset_records(keys)}
    return [entries[key].last_materialization_record if key in entries else None for key in keys]


def _runs_landing(instance: dg.DagsterInstance, models: set[dg.AssetKey]) -> int:
    """Unfinished runs other than builds of the models: whatever they land (the daily tables, sports, order books),
    the models may read it."""
    runs = instance.get_runs(filters=dg.RunsFilter(statuses=list(UNFINISHED)))
    return sum(not (run.asset_selection and run.asset_selection <= models) for run in runs)


def rebuild_sensor(assets: Sequence[dg.AssetsDefinition], settings: Settings) -> dg.SensorDefinition:
    """The sensor over the SQL models `assets`, watching the ingestion tables they read, looking every
    PMW_MARTS_INTERVAL_S seconds and waiting two ticks of the backfill sensor after a landing of its runs."""
    models = sorted({key for asset in assets for key in asset.keys})
    ingested = sorted({dep.asset_key for asset in assets for spec in asset.specs for dep in spec.deps} - set(models))

    @dg.sensor(
        name=SENSOR_NAME,
        job=dg.define_asset_job(MODELS_JOB, selection=dg.AssetSelection.assets(*assets),
                                description="Builds the SQL models (staging views, marts tables) in one run."),
        minimum_interval_seconds=settings.automation.marts_interval_s,
        default_status=dg.DefaultSensorStatus.RUNNING,
        description="Rebuilds every SQL model once, after ingestion tables have landed and no run or backfill that "
        "lands more is queued or running (every PMW_MARTS_INTERVAL_S seconds; it spends no API request).",
    )
    def sql_models_after_ingestion(context: dg.SensorEvaluationContext) -> dg.RunRequest | dg.SkipReason:
        settle_s = 2 * settings.automation.backfill_interval_s
        return decide(observe(context.instance, ingested, models, time.time()), settle_s)

    return sql_models_after_ingestion
