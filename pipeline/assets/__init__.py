"""Dagster assets: ingestion (ingest.py) and the SQL models (sql_models.py)."""
