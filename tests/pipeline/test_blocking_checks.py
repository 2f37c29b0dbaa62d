"""The ingestion checks block: a failed one stops what reads its table in the same run (the SQL models, and
the partition's tables read from markets), while its own partition lands and its result is recorded."""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from pipeline.assets.ingest import INGESTION_ASSETS
from pipeline.assets.sql_models import sql_assets
from pipeline.automation.jobs import ingestion_job
from pipeline.backfill import run_backfill
from pipeline.checks import CHECKS
from pipeline.definitions import defs
from pipeline.lake import Lake
from pipeline.resources import PipelineResource
from pipeline.sql.project import DEFAULT_SQL_DIR, load_project
from tests.pipeline.conftest import DAY
from tests.pipeline.test_check_reporting import PARTITION, PLATFORM, DuplicatingPipeline

MARKETS = dg.AssetKey("markets")
STG_MARKETS = dg.AssetKey(["staging", "stg_markets"])


def _markets_and_staging(resource: PipelineResource) -> dg.ExecuteInProcessResult:
    """One run: the markets partition, and the staging model that reads raw.markets."""
    markets = [a for a in INGESTION_ASSETS if a.key == MARKETS]
    return dg.materialize(
        [*markets, *sql_assets(load_project(DEFAULT_SQL_DIR))],
        selection=[MARKETS, STG_MARKETS],
        partition_key=PARTITION,
        resources={"pipeline": resource},
        instance=dg.DagsterInstance.ephemeral(),
        raise_on_error=False,
    )


def _materialised(result: dg.ExecuteInProcessResult) -> set[dg.AssetKey]:
    return {e.asset_key for e in result.get_asset_materialization_events() if e.asset_key is not None}


def _started(result: dg.ExecuteInProcessResult) -> set[str]:
    return {e.step_key for e in result.all_events if e.event_type == dg.DagsterEventType.STEP_START and e.step_key}


def test_every_ingestion_check_is_blocking_as_the_registry_says() -> None:
    assets = defs.get_repository_def().assets_defs_by_key
    for table, checks in CHECKS.items():
        specs = {spec.name: spec for spec in assets[dg.AssetKey(table)].check_specs}
        assert {name: spec.blocking for name, spec in specs.items()} == {c.name: c.blocking for c in checks}
        assert all(c.blocking for c in checks), table  # each means the data is wrong


def test_a_failed_check_holds_back_the_sql_model_reading_its_table_and_a_passing_one_does_not(
    pipeline_env: Path,
) -> None:
    failed = _markets_and_staging(DuplicatingPipeline())
    assert not failed.success
    assert _materialised(failed) == {MARKETS}  # the partition landed; the model reading it did not run
    assert Lake(pipeline_env / "lake").read_partition("markets", PLATFORM, DAY) is not None
    [unique] = [e for e in failed.get_asset_check_evaluations() if e.check_name == "unique_key"]
    assert not unique.passed and unique.blocking
    [failure] = failed.get_step_failure_events()
    assert failure.step_key == "markets" and "blocking asset check" in failure.step_failure_data.error.message
    assert _started(failed) == {"markets"}  # the SQL step was skipped: its upstream step failed

    passed = _markets_and_staging(PipelineResource())
    assert passed.success
    assert _started(passed) == {"markets", "dbt_like_sql"}
    assert _materialised(passed) == {MARKETS, STG_MARKETS}


def test_the_ingestion_job_does_not_retry_a_step_whose_checks_failed(pipeline_env: Path) -> None:
    """Its retry policy is for outages: the same data would fail the same checks, minutes later."""
    job = defs.resolve_job_def(ingestion_job.name)
    result = job.execute_in_process(partition_key=PARTITION, resources={"pipeline": DuplicatingPipeline()},
                                    instance=dg.DagsterInstance.ephemeral(), raise_on_error=False)
    assert job.op_retry_policy is not None  # the policy is there: it is not what it retries
    assert [e.step_key for e in result.get_step_failure_events()] == ["markets"]
    assert not [e for e in result.all_events if e.event_type == dg.DagsterEventType.STEP_UP_FOR_RETRY]


def test_a_backfill_names_the_failed_check_and_the_tables_it_held_back(pipeline_env: Path) -> None:
    lines: list[str] = []
    [report] = run_backfill([PLATFORM], DAY, DAY, resource=DuplicatingPipeline(), say=lines.append)
    assert not report.ok and not report.success
    assert lines[-2:] == [
        f"FAILED PARTITION {PLATFORM} {DAY}: series, events, trades, price_history not materialised: "
        "held back by the failed checks of markets",
        f"FAILED CHECK markets.unique_key {PLATFORM} {DAY}: 1 violation(s)",
    ]

