"""A `pmw` command's runs are runs of the code location's own jobs, so the UI lists them under the domain's job
(ingestion, sql_models, ...) and not as Dagster's ephemeral asset job."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest

from pipeline.cli.common.runs import materialise
from pipeline.defs.common.resources import PipelineResource
from pipeline.engine.config import Settings
from tests.support.runs import DAY


def test_a_commands_runs_are_named_after_the_job_of_their_assets(pipeline_env: Path) -> None:
    resource = PipelineResource(base_settings=Settings.from_env())
    with dg.DagsterInstance.ephemeral() as instance:
        landed = materialise([dg.AssetKey("markets")], resource, instance,
                             partition_key=dg.MultiPartitionKey({"platform": "kalshi", "date": DAY.isoformat()}))
        assert landed.success
        built = materialise([dg.AssetKey(["staging", "stg_trades"])], resource, instance)
        assert [run.job_name for run in instance.get_runs()] == ["sql_models", "ingestion"]  # newest first
        assert built.dagster_run.asset_selection == {dg.AssetKey(["staging", "stg_trades"])}


def test_an_asset_the_code_location_lacks_is_refused(pipeline_env: Path) -> None:
    with pytest.raises(ValueError, match="the code location has no asset nope"):
        materialise([dg.AssetKey("nope")], PipelineResource(base_settings=Settings.from_env()),
                    dg.DagsterInstance.ephemeral())
