"""Unattended runs: the daily schedule with its look-back, the rate-limit-aware backfill sensor, freshness."""
