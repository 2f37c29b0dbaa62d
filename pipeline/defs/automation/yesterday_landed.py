"""Freshness: a check per ingestion asset that fails when a configured platform's yesterday has not landed.

A day has landed when Dagster recorded its materialisation and its file is in the lake and reads: a record
alone is not trusted (the file may have been deleted, emptied or damaged since).

The daily run starts at 00:30 UTC; the checks run on their own schedule at 06:00 UTC, late enough for the
daily runs (and their retries) to have finished, and can be run from the UI at any time.
"""

from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta

import dagster as dg

from pipeline.defs.automation.budget import PartitionRef
from pipeline.defs.ingestion.assets import INGESTION_TABLES
from pipeline.engine.config import Settings
from pipeline.engine.lake.store import Lake

FRESHNESS_CHECK = "yesterday_landed"
FRESHNESS_JOB = "freshness_checks"
FRESHNESS_CHECK_KEYS = [dg.AssetCheckKey(dg.AssetKey(table), FRESHNESS_CHECK) for table in INGESTION_TABLES]


def is_recorded(instance: dg.DagsterInstance, asset_key: dg.AssetKey, ref: PartitionRef) -> bool:
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=asset_key, asset_partitions=[str(ref.key)]), limit=1
    )
    return bool(records.records)


def freshness_result(
    instance: dg.DagsterInstance, lake: Lake, asset_key: dg.AssetKey, day: date, platforms: tuple[str, ...]
) -> dg.AssetCheckResult:
    table = asset_key.to_user_string()
    unrecorded = [p for p in platforms if not is_recorded(instance, asset_key, PartitionRef(day, p))]
    unreadable = [p for p in platforms if p not in unrecorded and not lake.is_readable(table, p, day)]
    missing = [p for p in platforms if p in unrecorded or p in unreadable]
    said = [f"{day} has not landed for {', '.join(unrecorded)}"] if unrecorded else []
    if unreadable:
        said.append(f"{day} landed for {', '.join(unreadable)} but its file is gone or unreadable: "
                    f"{', '.join(str(lake.partition_path(table, p, day)) for p in unreadable)}")
    return dg.AssetCheckResult(
        asset_key=asset_key,
        check_name=FRESHNESS_CHECK,
        passed=not missing,
        severity=dg.AssetCheckSeverity.ERROR,
        description="; ".join(said) or f"{day} has landed for {', '.join(platforms)}",
        metadata={"day": day.isoformat(), "missing_platforms": missing, "platforms": list(platforms)},
    )


def yesterday_landed_check(settings: Settings) -> dg.AssetChecksDefinition:
    """The freshness check of every ingestion asset, over the platforms and the lake of `settings`."""

    @dg.multi_asset_check(
        name=FRESHNESS_CHECK,
        specs=[
            dg.AssetCheckSpec(
                FRESHNESS_CHECK,
                asset=table,
                description="Yesterday's partition (UTC) has landed for every platform of PMW_PLATFORMS, and its "
                "file is in the lake and reads.",
            )
            for table in INGESTION_TABLES
        ],
    )
    def yesterday_landed(context: dg.AssetCheckExecutionContext) -> Iterator[dg.AssetCheckResult]:
        yesterday = datetime.now(UTC).date() - timedelta(days=1)
        platforms = tuple(p.value for p in settings.platforms)
        lake = Lake.of(settings)
        for table in INGESTION_TABLES:
            yield freshness_result(context.instance, lake, dg.AssetKey(table), yesterday, platforms)

    return yesterday_landed


freshness_job = dg.define_asset_job(
    FRESHNESS_JOB,
    selection=dg.AssetSelection.checks(*FRESHNESS_CHECK_KEYS),
    description="Fails a check per asset when a platform's yesterday partition is missing.",
)

freshness_schedule = dg.ScheduleDefinition(
    name="daily_freshness_checks",
    job=freshness_job,
    cron_schedule="0 6 * * *",
    execution_timezone="UTC",
    description="Checks at 06:00 UTC that yesterday landed for every platform.",
)
