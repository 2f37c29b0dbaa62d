"""Freshness: a check per ingestion asset that fails when a configured platform's yesterday has not landed.

The daily run starts at 00:30 UTC; the checks run on their own schedule at 06:00 UTC, late enough for the
daily runs (and their retries) to have finished, and can be run from the UI at any time.
"""

from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta

import dagster as dg

from pipeline.defs.automation.budget import PartitionRef
from pipeline.defs.ingestion.assets import INGESTION_ASSETS
from pipeline.engine.config import platforms_from_env

FRESHNESS_CHECK = "yesterday_landed"
FRESHNESS_JOB = "freshness_checks"


def has_landed(instance: dg.DagsterInstance, asset_key: dg.AssetKey, ref: PartitionRef) -> bool:
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=asset_key, asset_partitions=[str(ref.key)]), limit=1
    )
    return bool(records.records)


def freshness_result(
    instance: dg.DagsterInstance, asset_key: dg.AssetKey, day: date, platforms: tuple[str, ...]
) -> dg.AssetCheckResult:
    missing = [p for p in platforms if not has_landed(instance, asset_key, PartitionRef(day, p))]
    summary = (
        f"{day} has not landed for {', '.join(missing)}" if missing else f"{day} has landed for {', '.join(platforms)}"
    )
    return dg.AssetCheckResult(
        asset_key=asset_key,
        check_name=FRESHNESS_CHECK,
        passed=not missing,
        severity=dg.AssetCheckSeverity.ERROR,
        description=summary,
        metadata={"day": day.isoformat(), "missing_platforms": missing, "platforms": list(platforms)},
    )


@dg.multi_asset_check(
    name=FRESHNESS_CHECK,
    specs=[
        dg.AssetCheckSpec(
            FRESHNESS_CHECK,
            asset=asset.key,
            description="Yesterday's partition (UTC) has landed for every platform of PMW_PLATFORMS.",
        )
        for asset in INGESTION_ASSETS
    ],
)
def yesterday_landed(context: dg.AssetCheckExecutionContext) -> Iterator[dg.AssetCheckResult]:
    yesterday = datetime.now(UTC).date() - timedelta(days=1)
    platforms = tuple(p.value for p in platforms_from_env())
    for asset in INGESTION_ASSETS:
        yield freshness_result(context.instance, asset.key, yesterday, platforms)


freshness_job = dg.define_asset_job(
    FRESHNESS_JOB,
    selection=dg.AssetSelection.checks(yesterday_landed),
    description="Fails a check per asset when a platform's yesterday partition is missing.",
)

freshness_schedule = dg.ScheduleDefinition(
    name="daily_freshness_checks",
    job=freshness_job,
    cron_schedule="0 6 * * *",
    execution_timezone="UTC",
    description="Checks at 06:00 UTC that yesterday landed for every platform.",
)
