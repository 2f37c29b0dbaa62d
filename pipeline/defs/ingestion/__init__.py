"""The ingestion assets: one per table, partitioned by platform and day."""
