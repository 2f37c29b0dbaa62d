"""The run tags every domain's schedules and sensors set, and the run queue's priorities."""

TRIGGER_TAG = "pmw/trigger"  # who asked for the run: daily, backfill_sensor, orderbook_round, ...
PRIORITY_TAG = "dagster/priority"  # the run queue launches higher values first
DAILY_PRIORITY = "10"
BACKFILL_PRIORITY = "-10"
