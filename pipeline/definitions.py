"""The Dagster code location of pm-warehouse (loaded by workspace.yaml)."""

import dagster as dg

from pipeline.assets.ingest import INGESTION_ASSETS
from pipeline.resources import PipelineResource

defs = dg.Definitions(
    assets=INGESTION_ASSETS,
    resources={"pipeline": PipelineResource()},
)
