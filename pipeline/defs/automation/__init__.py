"""Unattended runs: the daily schedule with its look-back, the rate-limit-aware backfill sensor, freshness."""

from pipeline.defs.automation.freshness import freshness_job, freshness_schedule, yesterday_landed
from pipeline.defs.automation.jobs import API_POOLS, ingestion_job
from pipeline.defs.automation.schedule import daily_ingestion
from pipeline.defs.automation.sensor import backfill_sensor

__all__ = [
    "API_POOLS",
    "backfill_sensor",
    "daily_ingestion",
    "freshness_job",
    "freshness_schedule",
    "ingestion_job",
    "yesterday_landed",
]
