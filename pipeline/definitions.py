"""The Dagster code location of pm-warehouse (loaded by workspace.yaml and `dagster definitions validate`).

Everything under pipeline/defs/ is discovered as Dagster's defs folder (the `[tool.dg]` section of pyproject.toml
names it for the `dg` tools): ingestion assets, the SQL models, automation, and the pipeline resource. The tree is
built from the module itself rather than found through pyproject.toml, which an installed wheel (a Docker image,
a server) does not have; `load_from_defs_folder` does the same after finding the file, and silences the same
preview warnings of the loaders it calls."""

import warnings
from pathlib import Path

import dagster as dg

import pipeline.defs

with warnings.catch_warnings():
    warnings.simplefilter("ignore", dg.PreviewWarning)
    defs = dg.ComponentTree.from_module(defs_module=pipeline.defs, project_root=Path(__file__).resolve().parents[1]
                                        ).build_defs()
