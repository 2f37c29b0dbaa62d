"""The traders' schedule: just after the daily ingestion, yesterday's profiles and trades of the watched traders."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta

import dagster as dg

from pipeline.defs.common.cron import daily_cron
from pipeline.defs.common.jobs import STEP_RETRY_POLICY
from pipeline.defs.common.tags import DAILY_PRIORITY, PRIORITY_TAG, TRIGGER_TAG
from pipeline.defs.profiles.assets import TRADER_TABLES
from pipeline.engine.config import Settings

TRADERS_JOB = "watched_traders"
TRADERS_TRIGGER = "traders_daily"
# A quarter of an hour after the daily ingestion's tick (PMW_DAILY_AT, 00:30 by default), at its priority:
# yesterday's metrics as of the night after it.
AFTER_DAILY = timedelta(minutes=15)

traders_job = dg.define_asset_job(
    TRADERS_JOB,
    selection=dg.AssetSelection.assets(*TRADER_TABLES),
    executor_def=dg.in_process_executor,
    op_retry_policy=STEP_RETRY_POLICY,
    description="The watched traders' profiles, metrics and trades of one (platform, day).",
)


def traders_at(daily_at: time) -> time:
    """The traders' tick: AFTER_DAILY after the daily ingestion's (past midnight, the next day's early minutes)."""
    return (datetime.combine(date(2000, 1, 1), daily_at) + AFTER_DAILY).time()


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


def daily_traders_schedule(settings: Settings) -> dg.ScheduleDefinition:
    """The traders' schedule of the code location's `settings`: a quarter of an hour after the daily ingestion."""

    @dg.schedule(
        name="daily_traders",
        job=traders_job,
        cron_schedule=daily_cron(traders_at(settings.automation.daily_at)),
        execution_timezone="UTC",
        description="Yesterday's profiles, metrics and trades of every trader of PMW_TRADER_WATCHLIST, a quarter of "
        "an hour after the daily ingestion (PMW_DAILY_AT + 15 minutes: 00:45 UTC by default).",
    )
    def daily_traders(context: dg.ScheduleEvaluationContext) -> list[dg.RunRequest]:
        return traders_requests(context.scheduled_execution_time or datetime.now(UTC), settings)

    return daily_traders
