"""The Dagster code location of pm-warehouse (loaded by workspace.yaml and `dagster definitions validate`).

Everything under pipeline/defs/ is discovered by `load_from_defs_folder` (the `[tool.dg]` section of
pyproject.toml names the folder): ingestion assets, the SQL models, automation, and the pipeline resource."""

from pathlib import Path

import dagster as dg

defs = dg.load_from_defs_folder(path_within_project=Path(__file__).parent)
