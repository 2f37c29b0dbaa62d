"""The traders' schedule: just after the daily ingestion, yesterday's profiles and trades of the watched traders."""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta

import dagster as dg

from pipeline.defs.automation.jobs import DAILY_PRIORITY, PRIORITY_TAG, STEP_RETRY_POLICY, TRIGGER_TAG
from pipeline.defs.profiles.assets import trader_profiles
from pipeline.engine.config import Settings

TRADERS_JOB = "watched_traders"
TRADERS_TRIGGER = "traders_daily"
# A quarter of an hour after the daily ingestion's tick (00:30), at its priority: yesterday's metrics as of the
# night after it.
TRADERS_AT = time(0, 45)

traders_job = dg.define_asset_job(
    TRADERS_JOB,
    selection=dg.AssetSelection.assets(trader_profiles),
    executor_def=dg.in_process_executor,
    op_retry_policy=STEP_RETRY_POLICY,
    description="The watched traders' profiles, metrics and trades of one (platform, day).",
)


def traders_requests(tick: datetime, settings: Settings) -> list[dg.RunRequest]:
    """Yesterday (relative to the tick) for every platform with watched traders."""
    yesterday = (tick.astimezone(UTC) - timedelta(days=1)).date()
    platforms = sorted({item.platform.value for item in settings.trader_watchlist})
    return [
        dg.RunRequest(
            run_key=f"{TRADERS_TRIGGER}:{yesterday}:{platform}",
            partition_key=dg.MultiPartitionKey({"date": yesterday.isoformat(), "platform": platform}),
            tags={TRIGGER_TAG: TRADERS_TRIGGER, PRIORITY_TAG: DAILY_PRIORITY},
        )
        for platform in platforms
    ]


@dg.schedule(
    name="daily_traders",
    job=traders_job,
    cron_schedule=f"{TRADERS_AT.minute} {TRADERS_AT.hour} * * *",
    execution_timezone="UTC",
    description="Yesterday's profiles, metrics and trades of every trader of PMW_TRADER_WATCHLIST.",
)
def daily_traders(context: dg.ScheduleEvaluationContext) -> list[dg.RunRequest]:
    return traders_requests(context.scheduled_execution_time or datetime.now(UTC), Settings.from_env())
