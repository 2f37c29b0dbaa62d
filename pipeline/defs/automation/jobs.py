"""The job that the daily schedule and the backfill sensor launch, and the API pools its assets run in."""

from __future__ import annotations

import dagster as dg

from pipeline.defs.automation.yesterday_landed import FRESHNESS_CHECK_KEYS
from pipeline.defs.common.jobs import STEP_RETRY_POLICY
from pipeline.defs.ingestion.assets import INGESTION_TABLES
from pipeline.engine.schema import PLATFORM_STATUS
from pipeline.engine.sources.factory import PLATFORM_APIS_POOL, UNIFIED_API_POOL

INGESTION_JOB = "ingestion"
ASSET_NAMES = INGESTION_TABLES

# The ingestion assets' pools: `unified_api` (PMW_SOURCE=api or sandbox) and `platform_apis` (direct);
# dagster.yaml gives every pool its limit.
API_POOLS = (UNIFIED_API_POOL, PLATFORM_APIS_POOL)

ingestion_job = dg.define_asset_job(
    INGESTION_JOB,
    # The assets with their per-partition data checks, and the observation of what the service says about itself;
    # the freshness checks run on their own schedule.
    selection=dg.AssetSelection.assets(*INGESTION_TABLES, PLATFORM_STATUS.name)
    - dg.AssetSelection.checks(*FRESHNESS_CHECK_KEYS),
    # The request budget, not the CPU, bounds a run: steps one after another in the run's process spend it
    # as fast as parallel ones would, without a process start per step.
    executor_def=dg.in_process_executor,
    op_retry_policy=STEP_RETRY_POLICY,
    description="The five ingestion assets of one (platform, day) partition, with their data checks, and the "
    "service's status (`platform_status`) observed by the run.",
)


def register_api_pools(instance: dg.DagsterInstance) -> None:
    """Create the API pools at dagster.yaml's `concurrency.pools.default_limit` if they do not exist yet.

    Dagster creates a pool only when a run first needs it; creating both up front lists them, with
    their limits, in the UI before the first run (and before any asset uses the other one).
    """
    storage = instance.event_log_storage
    if not storage.supports_global_concurrency_limits or instance.global_op_concurrency_default_limit is None:
        return
    for pool in set(API_POOLS) - storage.get_concurrency_keys():
        storage.initialize_concurrency_limit_to_default(pool)
