"""Unattended runs: the daily schedule with its look-back, the rate-limit-aware backfill sensor, freshness."""

from pipeline.automation.freshness import freshness_job, freshness_schedule, yesterday_landed
from pipeline.automation.jobs import API_POOLS, ingestion_job
from pipeline.automation.schedule import daily_ingestion
from pipeline.automation.sensor import backfill_sensor

__all__ = [
    "API_POOLS",
    "backfill_sensor",
    "daily_ingestion",
    "freshness_job",
    "freshness_schedule",
    "ingestion_job",
    "yesterday_landed",
]
