"""What every domain of the Dagster wiring shares: specs, partitions, landing, reporting, tags and job shape."""
