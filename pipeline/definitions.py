"""The Dagster code location of pm-warehouse (loaded by workspace.yaml).

The ingestion assets, checks, schedules and sensors register here as they land.
"""

import dagster as dg

defs = dg.Definitions()
