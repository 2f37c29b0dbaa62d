"""The Dagster wiring, built from one Settings by `location.build_definitions`: ingestion assets, order books,
traders, sports, SQL models, automation, the pipeline resource, and what they share (`common`)."""
