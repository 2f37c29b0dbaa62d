"""The daily schedule: after midnight UTC (PMW_DAILY_AT), yesterday for every platform plus a look-back for late
trades."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta

import dagster as dg

from pipeline.defs.automation.budget import PartitionRef
from pipeline.defs.automation.holds import platform_holds
from pipeline.defs.automation.jobs import ingestion_job
from pipeline.defs.common.cron import daily_cron
from pipeline.defs.common.tags import DAILY_PRIORITY, PRIORITY_TAG, TRIGGER_TAG
from pipeline.defs.ingestion.windows import WINDOW_TAG
from pipeline.engine.config import Settings
from pipeline.engine.spool.window import Window, windows_of

DAILY_TRIGGER = "daily"


def daily_partitions(tick_day: date, settings: Settings) -> list[PartitionRef]:
    """Yesterday (relative to the tick) and the `lookback_days` before it, newest first, per platform.

    Days before the first partition (PMW_START_DATE) are left out: they do not exist.
    """
    yesterday = tick_day - timedelta(days=1)
    days = [yesterday - timedelta(days=n) for n in range(settings.automation.lookback_days + 1)]
    return [PartitionRef(day, p.value) for day in days if day >= settings.first_day for p in settings.platforms]


def next_daily_tick(now: datetime, daily_at: time) -> datetime:
    """The schedule's next tick strictly after `now`, when it ticks at `daily_at` UTC."""
    today = datetime.combine(now.astimezone(UTC).date(), daily_at, UTC)
    return today if today > now else today + timedelta(days=1)


def daily_run_request(ref: PartitionRef, tick_day: date, window: Window) -> dg.RunRequest:
    """One partition of one day's tick; the key names the tick, so the look-back re-pulls on later days. The
    tick's days of a platform are one window: their trades and price history are read in one sweep."""
    return dg.RunRequest(
        run_key=f"{DAILY_TRIGGER}:{tick_day}:{ref.platform}:{ref.day}",
        partition_key=ref.key,
        tags={TRIGGER_TAG: DAILY_TRIGGER, PRIORITY_TAG: DAILY_PRIORITY, WINDOW_TAG: window.tag},
    )


def daily_ingestion_schedule(settings: Settings) -> dg.ScheduleDefinition:
    """The daily schedule of the code location's `settings`, ticking at PMW_DAILY_AT."""

    @dg.schedule(
        name="daily_ingestion",
        job=ingestion_job,
        cron_schedule=daily_cron(settings.automation.daily_at),
        execution_timezone="UTC",
        description="Yesterday for every configured platform, plus the PMW_LOOKBACK_DAYS before it for late data, "
        "at PMW_DAILY_AT (00:30 UTC by default), each platform's days read as one window.",
    )
    def daily_ingestion(context: dg.ScheduleEvaluationContext) -> list[dg.RunRequest] | dg.SkipReason:
        return daily_requests(context, settings)

    return daily_ingestion


def daily_requests(context: dg.ScheduleEvaluationContext, settings: Settings) -> list[dg.RunRequest] | dg.SkipReason:
    """The tick's runs, less those of the platforms the service holds (holds.py): the tick's log names them and
    why, and when every platform is held the tick is skipped with that reason."""
    tick = context.scheduled_execution_time or datetime.now(UTC)
    tick_day = tick.astimezone(UTC).date()
    refs = daily_partitions(tick_day, settings)
    holds = platform_holds((ref.platform for ref in refs), settings)
    if holds.summary():
        context.log.warning(holds.summary())
    refs = [ref for ref in refs if ref.platform not in holds.held]
    if not refs and holds.held:
        return dg.SkipReason(holds.summary())
    windows = {day: w for w in windows_of([ref.day for ref in refs], f"{DAILY_TRIGGER}-{tick_day}") for day in w.days}
    return [daily_run_request(ref, tick_day, windows[ref.day]) for ref in refs]
