"""The sports job and its daily schedule: every league's partition of the day, landed on that day.

The odds are live (the API keeps no history), so a (league, day) partition is the snapshot taken on the day: the
schedule asks for today's partitions, at midday UTC, well after the daily ingestion's burst after midnight. The
sports assets run in the unified API's pool and take their requests from the same shared budget, so the two
never overrun it together; the runs carry the daily priority, ahead of the backfill sensor's.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time

import dagster as dg

from pipeline.defs.common.jobs import STEP_RETRY_POLICY
from pipeline.defs.common.tags import DAILY_PRIORITY, PRIORITY_TAG, TRIGGER_TAG
from pipeline.engine.schema import SPORTS_TABLES, League

SPORTS_JOB = "sports"
SPORTS_AT = time(12, 0)
SPORTS_TRIGGER = "daily_sports"

sports_job = dg.define_asset_job(
    SPORTS_JOB,
    selection=dg.AssetSelection.assets(*SPORTS_TABLES),
    executor_def=dg.in_process_executor,
    op_retry_policy=STEP_RETRY_POLICY,
    description="The sports assets of one (league, day) partition, with their data checks.",
)


def sports_run_requests(day: date) -> list[dg.RunRequest]:
    """Every league's partition of `day`, one run each."""
    return [
        dg.RunRequest(
            run_key=f"{SPORTS_TRIGGER}:{day}:{league.value}",
            partition_key=dg.MultiPartitionKey({"league": league.value, "date": day.isoformat()}),
            tags={TRIGGER_TAG: SPORTS_TRIGGER, PRIORITY_TAG: DAILY_PRIORITY},
        )
        for league in League
    ]


@dg.schedule(
    name=SPORTS_TRIGGER,
    job=sports_job,
    cron_schedule=f"{SPORTS_AT.minute} {SPORTS_AT.hour} * * *",
    execution_timezone="UTC",
    description="Today's snapshot of every league's teams, futures, awards and odds (the API keeps no history).",
)
def daily_sports(context: dg.ScheduleEvaluationContext) -> list[dg.RunRequest]:
    tick = context.scheduled_execution_time or datetime.now(UTC)
    return sports_run_requests(tick.astimezone(UTC).date())
