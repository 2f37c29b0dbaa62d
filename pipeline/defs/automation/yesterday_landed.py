"""Freshness: a check per ingestion asset that fails when a configured platform's yesterday has not landed.

A day has landed when Dagster recorded its materialisation and its file is in the lake, reads and is the one the
pipeline landed: a record alone is not trusted (the file may have been deleted, emptied, damaged, or replaced by
another valid file since). The file's checksum must be one of the partition's last landings' (the last one, or an
earlier one `pmw restore` put back); a landing recorded without a checksum is held to its row count.

The daily run starts at 00:30 UTC; the checks run on their own schedule at 06:00 UTC, late enough for the
daily runs (and their retries) to have finished, and can be run from the UI at any time.
"""

from collections.abc import Iterator, Mapping
from datetime import UTC, date, datetime, timedelta
from typing import Any

import dagster as dg

from pipeline.defs.automation.budget import PartitionRef
from pipeline.defs.common.landing import CHECKSUM
from pipeline.defs.ingestion.assets import INGESTION_TABLES
from pipeline.engine.config import Settings
from pipeline.engine.lake.store import Lake

FRESHNESS_CHECK = "yesterday_landed"
FRESHNESS_JOB = "freshness_checks"
FRESHNESS_CHECK_KEYS = [dg.AssetCheckKey(dg.AssetKey(table), FRESHNESS_CHECK) for table in INGESTION_TABLES]


def landings(instance: dg.DagsterInstance, asset_key: dg.AssetKey, ref: PartitionRef,
             limit: int) -> list[Mapping[str, Any]]:
    """The metadata of the partition's last `limit` recorded materialisations, newest first."""
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=asset_key, asset_partitions=[str(ref.key)]), limit=limit
    ).records
    return [{k: v.value for k, v in (r.asset_materialization.metadata if r.asset_materialization else {}).items()}
            for r in records]


def not_as_landed(lake: Lake, table: str, ref: PartitionRef, landed: list[Mapping[str, Any]]) -> str | None:
    """Why the partition's readable file is not one the pipeline landed (`landed`: its landings, newest first), or
    None when it is."""
    checksums = {m[CHECKSUM] for m in landed if m.get(CHECKSUM)}
    if checksums and lake.checksum(table, ref.platform, ref.day) in checksums:
        return None
    rows, recorded = lake.row_count(table, ref.platform, ref.day), landed[0].get("dagster/row_count")
    if not checksums and (recorded is None or rows == recorded):
        return None
    differs = f"holds {rows} rows where {recorded} were landed" if rows != recorded else (
        f"holds {rows} rows as landed, but other bytes (its checksum is none of its last {len(landed)} landings')")
    return f"{ref.day} landed for {ref.platform}, but its file is not the one the pipeline landed: it {differs}"


def freshness_result(
    instance: dg.DagsterInstance, lake: Lake, asset_key: dg.AssetKey, day: date, platforms: tuple[str, ...],
    landings_held: int = 1,
) -> dg.AssetCheckResult:
    """The check of one asset's `day` over `platforms`; a file may be any of the partition's last `landings_held`
    landings (a restored one among them)."""
    table = asset_key.to_user_string()
    landed = {p: landings(instance, asset_key, PartitionRef(day, p), landings_held) for p in platforms}
    unrecorded = [p for p in platforms if not landed[p]]
    unreadable = [p for p in platforms if p not in unrecorded and not lake.is_readable(table, p, day)]
    altered = {p: why for p in platforms if p not in unrecorded and p not in unreadable
               and (why := not_as_landed(lake, table, PartitionRef(day, p), landed[p]))}
    missing = [p for p in platforms if p in unrecorded or p in unreadable or p in altered]
    said = [f"{day} has not landed for {', '.join(unrecorded)}"] if unrecorded else []
    if unreadable:
        said.append(f"{day} landed for {', '.join(unreadable)} but its file is gone or unreadable: "
                    f"{', '.join(str(lake.partition_path(table, p, day)) for p in unreadable)}")
    said += [f"{why}: {lake.partition_path(table, p, day)} (rerun the partition, or `pmw restore` a kept version)"
             for p, why in altered.items()]
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
                "file is in the lake, reads, and is the one the pipeline landed (its checksum recorded then).",
            )
            for table in INGESTION_TABLES
        ],
    )
    def yesterday_landed(context: dg.AssetCheckExecutionContext) -> Iterator[dg.AssetCheckResult]:
        yesterday = datetime.now(UTC).date() - timedelta(days=1)
        platforms = tuple(p.value for p in settings.platforms)
        lake = Lake.of(settings)
        for table in INGESTION_TABLES:
            yield freshness_result(context.instance, lake, dg.AssetKey(table), yesterday, platforms,
                                   settings.keep_versions + 1)

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
