"""`pmw backfill`: (platform, day) partitions materialised through Dagster, a line each, with progress meanwhile."""
