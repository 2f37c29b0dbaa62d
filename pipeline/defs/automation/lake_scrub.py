"""The lake's scrub in Dagster: job `lake_scrub` (one op, `scrub_lake`), run every day by schedule `daily_lake_scrub`.

The schedule `daily_lake_scrub` ticks at PMW_SCRUB_AT (03:00 UTC by default), on from the start unless PMW_SCRUB=0.
Each run reads back the lake files changed since the last scrub, or the whole lake every
PMW_SCRUB_WHOLE_EVERY_DAYS (pipeline.engine.lake.scrub), and fails (the run with it) when a file is bad, naming each
file and the command that puts it right. An op job rather than asset checks: a check on the lake's assets would run
in every job that selects one of them. `pmw status` shows the last scrub.
"""

from datetime import UTC, datetime, timedelta
from typing import Any

import dagster as dg

from pipeline.defs.common.cron import daily_cron
from pipeline.defs.common.resources import PipelineResource
from pipeline.engine.config import Settings
from pipeline.engine.lake.scrub import ScrubRecord, scrub
from pipeline.engine.lake.store import Lake
from pipeline.engine.lake.verify import BadFile

SCRUB_OP = "scrub_lake"
SCRUB_JOB = "lake_scrub"
SCRUB_SCHEDULE = "daily_lake_scrub"


def lake_scrub_job() -> dg.JobDefinition:
    """The scrub's job over the lake of the run's settings: one op, failed (the run with it) when a file is bad."""

    @dg.op(name=SCRUB_OP, description="Reads back the lake files changed since the last scrub (the whole lake every "
           "PMW_SCRUB_WHOLE_EVERY_DAYS), each page against its checksum; fails naming every bad file.")
    def scrub_lake(context: dg.OpExecutionContext, pipeline: PipelineResource) -> dg.Output[int]:
        run_settings = pipeline.settings()
        whole_every = timedelta(days=run_settings.automation.scrub_whole_every_days)
        record = scrub(Lake.of(run_settings), datetime.now(UTC), whole_every)
        context.log.info("lake scrub (%s): %d files read, %d bad", _scope(record), record.checked, len(record.bad))
        metadata = scrub_metadata(record)
        if record.bad:
            raise dg.Failure(description=failure_line(record), metadata=metadata)
        return dg.Output(record.checked, metadata=metadata)

    @dg.job(name=SCRUB_JOB, description="The lake's scrub: fails naming every lake file that does not read back as "
            "written, and the command that puts it right.")
    def lake_scrub() -> None:
        scrub_lake()

    return lake_scrub


def scrub_metadata(record: ScrubRecord) -> dict[str, Any]:
    """What a scrub found, for the op's output or failure: the files read, and each bad file with its remedy."""
    return {"scope": _scope(record), "files_read": record.checked,
            "bad_files": [f"{b.path}: {b.problem}; {remedy(b)}" for b in record.bad]}


def failure_line(record: ScrubRecord) -> str:
    """One line naming the bad files (at most three) and what to do."""
    shown = "; ".join(f"{b.path} ({b.problem})" for b in record.bad[:3])
    more = f" and {len(record.bad) - 3} more (metadata bad_files)" if len(record.bad) > 3 else ""
    return (f"lake scrub: {len(record.bad)} of the lake's files do not read back as written: {shown}{more}; put each "
            "back with pmw restore --table T --platform P --date D (or rerun its partition with pmw backfill)")


def remedy(bad: BadFile) -> str:
    """What puts a bad file right: a kept version put back, else its partition read again."""
    parts = str(bad.path).split("/")
    if len(parts) < 3 or not parts[-2].startswith("date=") or "=" not in parts[-3]:
        return "make it readable (permissions, disk), then run pmw verify"
    value, day = parts[-3].split("=", 1)[1], parts[-2].removeprefix("date=")
    return (f"put its last good version back with `pmw restore --table {bad.table} --platform {value} --date {day}`"
            f" (`--list` shows the kept versions), or rerun the partition with pmw backfill")


def _scope(record: ScrubRecord) -> str:
    return "the whole lake" if record.whole else "the files changed since the last scrub"


def lake_scrub_schedule(settings: Settings) -> dg.ScheduleDefinition:
    """The scrub's schedule, with its job: every day at PMW_SCRUB_AT, running unless PMW_SCRUB=0 (it can still be
    started)."""
    return dg.ScheduleDefinition(
        name=SCRUB_SCHEDULE,
        job=lake_scrub_job(),
        cron_schedule=daily_cron(settings.automation.scrub_at),
        execution_timezone="UTC",
        default_status=dg.DefaultScheduleStatus.RUNNING if settings.automation.scrub
        else dg.DefaultScheduleStatus.STOPPED,
        description="Scrubs the lake every day at PMW_SCRUB_AT (03:00 UTC by default): the files changed since the "
        "last scrub, the whole lake every PMW_SCRUB_WHOLE_EVERY_DAYS.",
    )
