"""The code location built from one Settings: every domain's assets, checks, jobs, schedules and sensors."""

from __future__ import annotations

import dagster as dg

from pipeline.defs.automation.jobs import ingestion_job
from pipeline.defs.automation.lake_scrub import lake_scrub_schedule
from pipeline.defs.automation.run_retention import run_retention_job, run_retention_schedule
from pipeline.defs.automation.schedule import daily_ingestion_schedule
from pipeline.defs.automation.sensor import backfill_sensor
from pipeline.defs.automation.yesterday_landed import freshness_job, freshness_schedule, yesterday_landed_check
from pipeline.defs.common.resources import PipelineResource
from pipeline.defs.ingestion.assets import ingestion_assets
from pipeline.defs.ingestion.platform_status import platform_status_asset
from pipeline.defs.links.assets import market_links
from pipeline.defs.orderbooks.assets import orderbook_round_asset
from pipeline.defs.orderbooks.schedule import orderbook_job, orderbook_rounds_schedule
from pipeline.defs.profiles.assets import trader_profiles_asset
from pipeline.defs.profiles.schedule import daily_traders_schedule, traders_job
from pipeline.defs.sports.assets import sports_assets
from pipeline.defs.sports.schedule import daily_sports, sports_job
from pipeline.defs.sql_models.assets import load_sql_assets
from pipeline.defs.sql_models.rebuild_sensor import rebuild_sensor
from pipeline.engine.config import Settings


def build_definitions(settings: Settings) -> dg.Definitions:
    """The code location of `settings`: partitions from its first day and platforms, pools from its source, crons
    and sensor intervals from its automation part, the SQL models of its SQL folder.

    The pipeline resource reads each run's settings when the run starts (`PipelineResource`). Every job that does
    not name an executor (the SQL models' rebuilds, materialisations and backfills launched from the UI) runs its
    steps one after another in the run's process, as the ingestion job does: a step's process would load the code
    location again (seconds) and gain nothing, since the request budget bounds the ingestion steps and the SQL
    models are one step that holds the warehouse file."""
    models = load_sql_assets(settings)
    return dg.Definitions(
        assets=[*ingestion_assets(settings), platform_status_asset(settings), orderbook_round_asset(settings),
                trader_profiles_asset(settings), *sports_assets(settings), market_links, *models],
        asset_checks=[yesterday_landed_check(settings)],
        jobs=[ingestion_job, orderbook_job, traders_job, sports_job, freshness_job, run_retention_job],
        schedules=[daily_ingestion_schedule(settings), orderbook_rounds_schedule(settings),
                   daily_traders_schedule(settings), daily_sports, freshness_schedule,
                   run_retention_schedule(settings), lake_scrub_schedule(settings)],
        sensors=[backfill_sensor(settings), *([rebuild_sensor([market_links, *models], settings)] if models else [])],
        resources={"pipeline": PipelineResource()},
        executor=dg.in_process_executor,
    )
