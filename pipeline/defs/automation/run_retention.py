"""Dagster's finished runs older than PMW_RUN_RETENTION_DAYS deleted every day, so a year of nights stays bounded.

A run's events, logs and check results go with it (`DagsterInstance.delete_run`), and on SQLite storage its event
file and its captured output too. What landed is not forgotten: the backfill sensor and `pmw status` read which
partitions landed from Dagster's materialisations, so each materialisation of the run that is still the newest of
its partition is recorded again first, without a run, with its metadata but the run's 429s
(`report_runless_asset_event`). Queued and running runs are never deleted. Tick history is bounded by the
instance's `retention` settings (dagster.yaml).
"""

import os
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import dagster as dg
from dagster._core.storage.event_log.sqlite import SqliteEventLogStorage  # not exported: its run files outlive runs

from pipeline.defs.common.cron import daily_cron
from pipeline.defs.common.resources import PipelineResource
from pipeline.engine.config import Settings

FINISHED = [dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED]
BATCH = 100  # runs looked up at a time
# What a carried materialisation leaves out: the run's 429s, which the backfill sensor would take for fresh ones in a
# new record (`saw_429s` in sensor.py) and halve its budget for.
NOT_CARRIED = frozenset({"rate_limited_answers"})


@dataclass(frozen=True)
class Pruned:
    """What a pruning did: the runs deleted, and the newest materialisations they held, recorded again."""

    runs: int
    carried: int


def prune_runs(instance: dg.DagsterInstance, before: datetime) -> Pruned:
    """Delete every finished run created before `before`, carrying over its partitions' newest materialisations."""
    deleted: set[str] = set()  # a storage that kept a deleted run would offer it again: looked at once
    carried = 0
    while ids := [record.dagster_run.run_id for record in instance.get_run_records(
            filters=dg.RunsFilter(statuses=FINISHED, created_before=before), limit=BATCH, ascending=True)
            if record.dagster_run.run_id not in deleted]:
        for run_id in ids:
            carried += _carry_newest_materialisations(instance, run_id)
            _delete_run(instance, run_id)
            deleted.add(run_id)
    return Pruned(len(deleted), carried)


def _carry_newest_materialisations(instance: dg.DagsterInstance, run_id: str) -> int:
    """Record again, without a run, each materialisation of the run that is the newest of its asset's partition."""
    carried = 0
    events = instance.get_records_for_run(run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION).records
    for event in events:
        materialisation = event.asset_materialization
        if materialisation is None:
            continue
        partitions = [materialisation.partition] if materialisation.partition else None
        newest = instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=materialisation.asset_key, asset_partitions=partitions), limit=1).records
        if newest and newest[0].run_id == run_id:
            metadata = {name: value for name, value in materialisation.metadata.items() if name not in NOT_CARRIED}
            instance.report_runless_asset_event(dg.AssetMaterialization(
                asset_key=materialisation.asset_key, description=materialisation.description, metadata=metadata,
                partition=materialisation.partition, tags=materialisation.tags))
            carried += 1
    return carried


def _delete_run(instance: dg.DagsterInstance, run_id: str) -> None:
    instance.delete_run(run_id)
    instance.compute_log_manager.delete_logs(prefix=[run_id])
    storage = instance.event_log_storage
    if isinstance(storage, SqliteEventLogStorage):  # its events are deleted, not the file that held them
        shard = storage.path_for_shard(run_id)
        if os.path.exists(shard):
            os.remove(shard)


@dg.op(description="Deletes Dagster's finished runs older than PMW_RUN_RETENTION_DAYS (0: none).")
def prune_old_runs(context: dg.OpExecutionContext, pipeline: PipelineResource) -> None:
    days = pipeline.settings().automation.run_retention_days
    if not days:
        context.log.info("PMW_RUN_RETENTION_DAYS=0: every run is kept")
        return
    before = datetime.now(UTC) - timedelta(days=days)
    pruned = prune_runs(context.instance, before)
    context.log.info(f"deleted {pruned.runs} finished run(s) created before {before:%Y-%m-%d %H:%M} UTC "
                     f"(PMW_RUN_RETENTION_DAYS={days}); {pruned.carried} newest materialisation(s) recorded again")


@dg.job(description="Deletes Dagster's finished runs older than PMW_RUN_RETENTION_DAYS.")
def run_retention_job() -> None:
    prune_old_runs()


def run_retention_schedule(settings: Settings) -> dg.ScheduleDefinition:
    """Every day at PMW_DAILY_AT, running from the start: it spends no API request."""
    return dg.ScheduleDefinition(
        name="run_retention",
        job=run_retention_job,
        cron_schedule=daily_cron(settings.automation.daily_at),
        execution_timezone="UTC",
        default_status=dg.DefaultScheduleStatus.RUNNING,
        description="Deletes Dagster's finished runs older than PMW_RUN_RETENTION_DAYS (30 by default; 0 keeps "
                    "them), recording again the newest materialisation of each partition they landed.",
    )
