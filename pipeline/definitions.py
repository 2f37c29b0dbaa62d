"""The Dagster code location of pm-warehouse (loaded by workspace.yaml)."""

import dagster as dg

from pipeline.assets.ingest import INGESTION_ASSETS
from pipeline.assets.sql_models import load_sql_assets
from pipeline.automation import (
    backfill_sensor,
    daily_ingestion,
    freshness_job,
    freshness_schedule,
    ingestion_job,
    yesterday_landed,
)
from pipeline.resources import PipelineResource

defs = dg.Definitions(
    assets=[*INGESTION_ASSETS, *load_sql_assets()],
    asset_checks=[yesterday_landed],
    jobs=[ingestion_job, freshness_job],
    schedules=[daily_ingestion, freshness_schedule],
    sensors=[backfill_sensor],
    resources={"pipeline": PipelineResource()},
)
