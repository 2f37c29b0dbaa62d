"""The Dagster wiring, loaded by `load_from_defs_folder`: ingestion assets, SQL models, automation, resources."""
