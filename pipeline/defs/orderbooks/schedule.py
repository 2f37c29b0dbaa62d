"""The snapshot schedule: every PMW_ORDERBOOK_EVERY_MIN minutes (60 by default), one round per platform.

Each tick asks for one run per platform that has books to take (Polymarket and Kalshi when PMW_ORDERBOOK_TOP_N
is above 0 or the watch list names their markets; Limitless and Manifold when it names theirs), tagged with the
tick as the round's time. The runs go through the run queue at a priority between the daily ingestion's and
the backfill's, and through the same `unified_api` pool and request budget: a queued daily run is launched
before a round, and a round waits for the pool rather than spending the budget beside a running partition.
"""

from __future__ import annotations

from datetime import UTC, datetime

import dagster as dg

from pipeline.defs.common.jobs import STEP_RETRY_POLICY
from pipeline.defs.common.tags import PRIORITY_TAG, TRIGGER_TAG
from pipeline.defs.orderbooks.assets import ORDERBOOK_TABLES, SNAPSHOT_AT_TAG
from pipeline.engine.config import Settings
from pipeline.engine.schema import MARKET_PLATFORMS, ORDERBOOK_PLATFORMS, Platform

ORDERBOOK_JOB = "orderbook_snapshots"
ROUND_TRIGGER = "orderbook_round"
ROUND_PRIORITY = "0"  # between the daily run's 10 and the backfill's -10

orderbook_job = dg.define_asset_job(
    ORDERBOOK_JOB,
    selection=dg.AssetSelection.assets(*ORDERBOOK_TABLES),
    executor_def=dg.in_process_executor,
    op_retry_policy=STEP_RETRY_POLICY,
    description=f"One snapshot round of a platform's orderbooks into {' and '.join(ORDERBOOK_TABLES)}.",
)


def cron_every(minutes: int) -> str:
    """The cron expression of a round every `minutes` (a divisor of an hour, or whole hours dividing a day)."""
    if minutes < 60:
        return f"*/{minutes} * * * *" if minutes > 1 else "* * * * *"
    hours = minutes // 60
    return "0 * * * *" if hours == 1 else f"0 */{hours} * * *" if hours < 24 else "0 0 * * *"


def platforms_with_books(settings: Settings) -> list[Platform]:
    """The platforms a round has markets to ask for."""
    watched = {item.platform for item in settings.orderbook_watchlist}
    return [p for p in ORDERBOOK_PLATFORMS
            if p in watched or (p in MARKET_PLATFORMS and settings.orderbook_top_n > 0)]


def round_requests(tick: datetime, settings: Settings) -> list[dg.RunRequest]:
    """One run per platform with books, for the round at `tick`; the run key names the round."""
    moment = tick.astimezone(UTC).replace(second=0, microsecond=0)
    return [
        dg.RunRequest(
            run_key=f"{ROUND_TRIGGER}:{moment.isoformat()}:{platform.value}",
            partition_key=dg.MultiPartitionKey({"date": moment.date().isoformat(), "platform": platform.value}),
            tags={SNAPSHOT_AT_TAG: moment.isoformat(), TRIGGER_TAG: ROUND_TRIGGER, PRIORITY_TAG: ROUND_PRIORITY},
        )
        for platform in platforms_with_books(settings)
    ]


def orderbook_rounds_schedule(settings: Settings) -> dg.ScheduleDefinition:
    """The snapshot schedule of the code location's `settings`: a round every PMW_ORDERBOOK_EVERY_MIN minutes."""

    @dg.schedule(
        name="orderbook_rounds",
        job=orderbook_job,
        cron_schedule=cron_every(settings.orderbook_every_min),
        execution_timezone="UTC",
        description="A snapshot round of every platform with books, every PMW_ORDERBOOK_EVERY_MIN minutes.",
    )
    def orderbook_rounds(context: dg.ScheduleEvaluationContext) -> list[dg.RunRequest]:
        return round_requests(context.scheduled_execution_time or datetime.now(UTC), settings)

    return orderbook_rounds
