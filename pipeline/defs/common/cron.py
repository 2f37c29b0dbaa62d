"""The cron expression of a schedule that ticks once a day, shared by the daily ingestion's and the traders'."""

from datetime import time


def daily_cron(daily_at: time) -> str:
    """Every day at `daily_at` (UTC, the schedules' timezone)."""
    return f"{daily_at.minute} {daily_at.hour} * * *"
