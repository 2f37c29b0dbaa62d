"""The Dagster code location of pm-warehouse (loaded by workspace.yaml)."""

import dagster as dg

from pipeline.defs.automation import (
    backfill_sensor,
    daily_ingestion,
    freshness_job,
    freshness_schedule,
    ingestion_job,
    yesterday_landed,
)
from pipeline.defs.ingestion.assets import INGESTION_ASSETS
from pipeline.defs.resources import PipelineResource
from pipeline.defs.sql_models.assets import load_sql_assets

defs = dg.Definitions(
    assets=[*INGESTION_ASSETS, *load_sql_assets()],
    asset_checks=[yesterday_landed],
    jobs=[ingestion_job, freshness_job],
    schedules=[daily_ingestion, freshness_schedule],
    sensors=[backfill_sensor],
    resources={"pipeline": PipelineResource()},
)
