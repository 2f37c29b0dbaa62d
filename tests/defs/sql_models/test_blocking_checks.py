"""A failed ingestion check holds back the SQL models that read its table, in the same run, and nothing else.

The check is reported (severity ERROR, with examples) and its step succeeds, so the partition lands whole,
all five tables of it even when the check is one of `markets` (the other four read the markets partition).
The SQL step reads the run's check evaluations and builds only the models that read no table whose blocking
check failed (`Check.blocking`); the SQL tests of the models held back do not run.
"""

from __future__ import annotations

import logging
from pathlib import Path

import dagster as dg
import polars as pl
import pytest

from pipeline.cli.backfill.partitions import run_backfill
from pipeline.definitions import defs
from pipeline.defs.automation.jobs import ingestion_job
from pipeline.defs.common.resources import PipelineResource
from pipeline.defs.sql_models.assets import FailedIngestionCheck, asset_key, held_back, sql_assets
from pipeline.engine.checks import CHECKS
from pipeline.engine.lake.store import Lake
from pipeline.engine.schema import TABLES, lake_tables
from pipeline.engine.warehouse.project import DEFAULT_SQL_DIR, Relation, load_project
from tests.defs.ingestion.test_check_reporting import PARTITION, PLATFORM
from tests.support.location import INGESTION_ASSETS
from tests.support.rewritten_markets import markets_rewritten
from tests.support.runs import DAY, shared_instance

PROJECT = load_project(DEFAULT_SQL_DIR)
TABLE_KEYS = {dg.AssetKey(table) for table in TABLES}
# The sports marts read no market table: they are built whatever the market tables' checks say.
SPORTS_MARTS = {dg.AssetKey(["marts", "future_odds_daily"]), dg.AssetKey(["marts", "platform_margin_daily"])}
SPORTS_SQL_TESTS = ("future_odds_daily_consensus_in_unit_interval", "future_odds_daily_consensus_sums_to_one",
                    "future_odds_daily_prices_present", "future_odds_daily_unique_key",
                    "platform_margin_daily_unique_key")
# What reads raw.markets, directly or through other models: held back when a check of markets fails.
READ_MARKETS = {Relation("staging", name) for name in ("stg_markets", "stg_market_days", "stg_market_outcomes")} | {
    Relation("marts", name)
    for name in ("dim_markets", "market_daily", "platform_daily", "category_volume", "price_candles_hourly",
                 "cross_platform_daily")
}
READ_TRADES = {Relation("staging", "stg_trades")} | {
    Relation("marts", name) for name in ("market_daily", "platform_daily", "category_volume", "cross_platform_daily")
}


def _first_status_unknown(rows: pl.DataFrame) -> pl.DataFrame:
    first = pl.int_range(pl.len()) == 0
    return rows.with_columns(pl.when(first).then(pl.lit("suspended")).otherwise(pl.col("status")).alias("status"))


# The first market has a status outside the enum: `markets.status_enum` fails, 1 violation.
UnknownStatusPipeline = markets_rewritten(_first_status_unknown)


def _partition_and_models(resource: PipelineResource, instance: dg.DagsterInstance) -> dg.ExecuteInProcessResult:
    """One run: the five ingestion assets of the partition and every SQL model, with their checks."""
    return dg.materialize(
        [*INGESTION_ASSETS, *sql_assets(PROJECT)],
        partition_key=PARTITION,
        resources={"pipeline": resource},
        instance=instance,
        raise_on_error=False,
    )


def _materialised(result: dg.ExecuteInProcessResult) -> set[dg.AssetKey]:
    return {e.asset_key for e in result.get_asset_materialization_events() if e.asset_key is not None}


def _warnings(instance: dg.DagsterInstance, result: dg.ExecuteInProcessResult) -> list[str]:
    return [e.user_message for e in instance.all_logs(result.run_id) if e.level == logging.WARNING]


def test_ingestion_checks_are_reported_not_dagster_blocking_and_the_registry_says_which_hold_back_sql() -> None:
    assets = defs.get_repository_def().assets_defs_by_key
    for table, checks in CHECKS.items():
        specs = {spec.name: spec for spec in assets[dg.AssetKey(table)].check_specs
                 if spec.asset_key == dg.AssetKey(table)}  # a multi-asset holds its other tables' checks too
        assert set(specs) == {c.name for c in checks}
        assert not any(spec.blocking for spec in specs.values()), table  # a failed one never fails its step
        # Each means the data is wrong, and holds back the SQL; a source that disagrees with itself (one id sent
        # with two contents) is a warning: the version landed is one it gave; so is a platform's book of a future
        # missing outcomes (its prices are right, the marts take margins out per platform), and platforms the sports
        # answers say they could not reach (the rows landed are right).
        expected = {"repeats_agree"} if lake_tables()[table].listed_by_id else set()
        expected |= {"outcomes_cover_the_field"} if table == "future_odds" else set()
        expected |= {"no_platform_errors"} if table in ("futures", "awards", "future_odds") else set()
        expected |= set() if lake_tables()[table].rounds else {"rows_kept"}  # a rerun that kept fewer rows: a warning
        assert {c.name for c in checks if not c.blocking} == expected, table


def test_held_back_are_the_models_reading_the_failed_table_directly_or_through_other_models() -> None:
    trades = FailedIngestionCheck("trades", "prices_in_unit_interval", f"{DAY.isoformat()}|polymarket", 1)
    markets = FailedIngestionCheck("markets", "status_enum", f"{DAY.isoformat()}|kalshi", 3)
    assert held_back(PROJECT, []) == {}
    assert held_back(PROJECT, [trades]) == {relation: [trades] for relation in READ_TRADES}
    both = held_back(PROJECT, [trades, markets])
    assert set(both) == READ_TRADES | READ_MARKETS
    assert both[Relation("marts", "market_daily")] == [trades, markets]
    assert both[Relation("staging", "stg_markets")] == [markets]
    assert str(trades) == f"trades.prices_in_unit_interval failed (polymarket {DAY}, 1 violation)"
    assert str(markets) == f"markets.status_enum failed (kalshi {DAY}, 3 violations)"


@pytest.mark.slow
def test_a_failed_markets_check_lands_the_whole_partition_and_holds_back_only_the_models_reading_markets(
    pipeline_env: Path,
) -> None:
    instance = dg.DagsterInstance.ephemeral()
    result = _partition_and_models(UnknownStatusPipeline(), instance)

    assert result.success, [e.step_failure_data.error for e in result.get_step_failure_events()]
    [status] = [e for e in result.get_asset_check_evaluations() if not e.passed]
    assert (status.asset_key, status.check_name) == (dg.AssetKey("markets"), "status_enum")
    assert status.severity == dg.AssetCheckSeverity.ERROR and not status.blocking
    assert status.metadata["violations"].value == 1 and status.metadata["examples"].value[0]["status"] == "suspended"
    lake = Lake(pipeline_env / "lake")
    assert all(lake.read_partition(table, PLATFORM, DAY) is not None for table in TABLES)
    built = {asset_key(relation) for relation in PROJECT.models if relation not in READ_MARKETS}
    watch_lists = {dg.AssetKey([schema, n]) for schema, n in (
        ("staging", "stg_orderbook_snapshots"), ("marts", "orderbook_daily"), ("staging", "stg_profiles"),
        ("staging", "stg_profile_trades"), ("marts", "trader_daily"))}  # they read no markets (and here no rows)
    assert built == {dg.AssetKey(["staging", n]) for n in ("stg_events", "stg_series", "stg_member_ids", "stg_trades",
                                                            "stg_price_history", "stg_future_odds")} | (
        watch_lists | SPORTS_MARTS)
    assert _materialised(result) == TABLE_KEYS | built  # the partition whole, and the models not reading markets
    sql_checks = {e.check_name: e.passed for e in result.get_asset_check_evaluations() if e.asset_key not in TABLE_KEYS}
    assert sql_checks == {"trade_prices_in_unit_interval": True, "price_history_in_unit_interval": True,
                          "orderbook_daily_unique_key": True, "trader_daily_unique_key": True,
                          **dict.fromkeys(SPORTS_SQL_TESTS, True)}
    warnings = _warnings(instance, result)
    for relation in READ_MARKETS:
        assert f"{relation} held back: markets.status_enum failed ({PLATFORM} {DAY}, 1 violation)" in warnings

    passing = _partition_and_models(PipelineResource(), instance)
    assert passing.success
    assert _materialised(passing) == TABLE_KEYS | {asset_key(relation) for relation in PROJECT.models}
    assert [e.check_name for e in passing.get_asset_check_evaluations() if not e.passed] == []
    assert not [w for w in _warnings(instance, passing) if "held back" in w]


def test_the_ingestion_job_lands_a_partition_whose_check_failed_without_retrying(pipeline_env: Path) -> None:
    job = defs.resolve_job_def(ingestion_job.name)
    result = job.execute_in_process(partition_key=PARTITION, resources={"pipeline": UnknownStatusPipeline()},
                                    instance=shared_instance(), raise_on_error=False)
    assert job.op_retry_policy is not None  # the policy is there; nothing failed for it to retry
    assert result.success and not result.get_step_failure_events()
    assert not [e for e in result.all_events if e.event_type == dg.DagsterEventType.STEP_UP_FOR_RETRY]
    assert _materialised(result) == TABLE_KEYS | {dg.AssetKey("platform_status")}  # and the run's observation
    assert [e.check_name for e in result.get_asset_check_evaluations() if not e.passed] == ["status_enum"]


def test_a_backfill_lands_the_partition_whole_and_names_the_failed_check(pipeline_env: Path) -> None:
    lines: list[str] = []
    [report] = run_backfill([PLATFORM], DAY, DAY, resource=UnknownStatusPipeline(), say=lines.append,
                            instance=dg.DagsterInstance.ephemeral())
    assert report.success and not report.ok  # landed whole; a check of severity ERROR failed: exit 1
    assert set(report.rows) == set(TABLES)
    assert lines[-1] == f"FAILED CHECK markets.status_enum {PLATFORM} {DAY}: 1 violation(s)"
    assert not [line for line in lines if line.startswith("FAILED PARTITION")]
