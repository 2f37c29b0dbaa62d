"""The sports assets through Dagster on one league's day of the sandbox, then the sports marts: every table lands
with every check passing, a polars recomputation of marts.future_odds_daily from the lake matches it, a platform
missing from a future leaves no null price, an outcome priced by one platform keeps that price, and a failing
check is reported, never raised.

The day is landed once, in one test (two tests sharing a module fixture could each land it, one per worker).
"""

from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from pipeline.defs.common.resources import PipelineResource
from pipeline.engine.lake.store import Lake
from pipeline.engine.normalize.sports import Lineage, normalize_records
from pipeline.engine.schema import SPORTS_PLATFORMS, SPORTS_TABLES
from pipeline.engine.warehouse import build as warehouse_build
from pipeline.engine.warehouse.project import Relation, load_project
from pipeline.engine.warehouse.views import connect_read_only
from pmw_sandbox import plug
from pmw_sandbox.sports import SportsWorld
from tests.support.location import SPORTS_ASSETS, future_odds
from tests.support.paths import REPO_ROOT
from tests.support.runs import shared_instance
from tests.support.world import PIPELINE_WORLD, pipeline_sandbox

LEAGUE = "nhl"
DAY = PIPELINE_WORLD.end_day
KEY = dg.MultiPartitionKey({"league": LEAGUE, "date": DAY.isoformat()})
MART_KEY = ["league", "day", "kind", "future_id", "outcome_key"]
SPORTS_MARTS = (Relation("staging", "stg_future_odds"), Relation("marts", "future_odds_daily"),
                Relation("marts", "platform_margin_daily"))


@pytest.fixture
def sandbox_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """The in-process sandbox of the pipeline's test world, a private data dir; the data dir's path."""
    for name in ("PMW_API_URL", "PMW_API_KEY", "PMW_PLATFORMS", "PMW_SANDBOX_FAULTS", "PMW_SANDBOX_READINGS"):
        monkeypatch.delenv(name, raising=False)
    for name, value in {"PMW_SOURCE": "sandbox", "PMW_DATA_DIR": str(tmp_path / "data"),
                        "PMW_SANDBOX_SEED": str(PIPELINE_WORLD.seed), "PMW_SANDBOX_END": DAY.isoformat(),
                        "PMW_RATE_LIMIT_DB": str(tmp_path / "budget.sqlite")}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(plug, "sandbox_app", pipeline_sandbox)
    return tmp_path / "data"


def _build_sports_marts(data: Path) -> list[warehouse_build.Outcome]:
    project = load_project(REPO_ROOT / "dbt_like_sql")
    tests = [test for test in project.tests if test.subject in SPORTS_MARTS]
    return list(warehouse_build.build(project, data / "lake", data / "warehouse.duckdb", SPORTS_MARTS, tests))  # type: ignore[arg-type]


def _mart(data: Path, name: str) -> pl.DataFrame:
    with connect_read_only(data / "warehouse.duckdb") as db:
        return pl.from_arrow(db.sql(f"SELECT * FROM marts.{name}").to_arrow_table())  # type: ignore[return-value]


def _recomputed(odds: pl.DataFrame) -> pl.DataFrame:
    """marts.future_odds_daily's consensus and spread, from the lake's rows, in polars."""
    key = pl.when((pl.col("kind") == "future") & pl.col("team_router_id").is_not_null()).then("team_router_id")
    priced = (odds.filter(pl.col("implied_probability") > 0)
              .with_columns(key.otherwise(pl.col("outcome_name").str.strip_chars().str.to_lowercase())
                            .alias("outcome_key"), pl.col("date").alias("day"))
              .group_by([*MART_KEY, "platform"]).agg(pl.col("implied_probability").mean()))
    fair = priced.with_columns(
        (pl.col("implied_probability") / pl.col("implied_probability").sum()
         .over("league", "day", "kind", "future_id", "platform")).alias("fair"))
    outcomes = fair.group_by(MART_KEY).agg(
        pl.len().cast(pl.Int64).alias("platforms"), pl.col("fair").mean().alias("mean_fair"),
        (pl.col("fair").max() - pl.col("fair").min()).alias("spread"))
    return outcomes.with_columns(
        (pl.col("mean_fair") / pl.col("mean_fair").sum().over("league", "day", "kind", "future_id"))
        .alias("consensus_probability")).select(*MART_KEY, "platforms", "consensus_probability", "spread")


@pytest.mark.slow
def test_a_league_day_lands_checked_and_its_marts_agree_with_the_lake(sandbox_env: Path) -> None:
    result = dg.materialize(SPORTS_ASSETS, partition_key=KEY, resources={"pipeline": PipelineResource()},
                            instance=shared_instance())
    assert result.success
    evaluations = result.get_asset_check_evaluations()
    assert evaluations and all(e.passed for e in evaluations)
    lake = Lake(sandbox_env / "lake")
    counts = {table: lake.row_count(table, LEAGUE, DAY) for table in SPORTS_TABLES}
    assert counts["leagues"] == 1 and counts["teams"] == 32 and all(counts.values()), counts
    outcomes = _build_sports_marts(sandbox_env)
    assert [type(o) for o in outcomes].count(warehouse_build.Built) == len(SPORTS_MARTS)
    tested = [o for o in outcomes if isinstance(o, warehouse_build.Tested)]
    assert len(tested) == 5 and all(o.passed for o in tested)  # the sports marts' five SQL tests

    odds, futures = lake.read_partition("future_odds", LEAGUE, DAY), lake.read_partition("futures", LEAGUE, DAY)
    assert odds is not None and futures is not None
    mart = _mart(sandbox_env, "future_odds_daily")
    # A test recomputes the consensus and the spread from the lake, in polars.
    assert_frame_equal(_recomputed(odds).sort(MART_KEY),
                       mart.select(*MART_KEY, "platforms", "consensus_probability", "spread").sort(MART_KEY),
                       check_exact=False, rel_tol=1e-9)
    # A platform missing from a future's platform_markets leaves no null-priced row, and no failed check (above).
    listing = futures.select("id", *(pl.col("platform_markets").struct.field(p).is_not_null().alias(p)
                                     for p in SPORTS_PLATFORMS))
    partial = listing.filter(~pl.all_horizontal(*SPORTS_PLATFORMS))
    assert partial.height, "the world has futures that some platform does not list"
    prices = mart.explode("platform_prices").unnest("platform_prices")
    assert prices.select("platform", "implied_probability", "fair_probability").null_count().sum_horizontal()[0] == 0
    for row in partial.iter_rows(named=True):
        absent = [p for p in SPORTS_PLATFORMS if not row[p]]
        assert prices.filter((pl.col("future_id") == row["id"]) & pl.col("platform").is_in(absent)).is_empty()
    # An outcome priced by one platform only still appears, with that platform's price.
    lone = prices.filter(pl.col("platforms") == 1)
    assert lone.height, "some outcome is priced by one platform only"
    joined = lone.join(odds.rename({"implied_probability": "landed"}),
                       on=["future_id", "platform", "outcome_name"], how="left")
    assert (joined["landed"] == joined["implied_probability"]).all() and (joined["spread"] == 0).all()
    margins = _mart(sandbox_env, "platform_margin_daily")
    assert set(margins["platform"]) == set(SPORTS_PLATFORMS) and (margins["average_overround"] > 0).all()
    assert margins["average_overround"].n_unique() == margins.height  # a margin of its own per platform


def test_a_failing_check_is_reported_and_the_partition_still_lands(sandbox_env: Path) -> None:
    """The day's futures and teams as the sandbox lists them, but one team the odds name missing: the odds land,
    and `team_of_the_league` reports them."""
    world = SportsWorld(PIPELINE_WORLD.seed)
    lineage = Lineage(LEAGUE, DAY, "sandbox", datetime.now(UTC))
    teams = world.league_record(world.questions[LEAGUE][0].league, include_teams=True)["teams"]
    futures = [world.list_item(q) for q in world.questions[LEAGUE] if q.kind == "future"][:1]
    lake = Lake(sandbox_env / "lake")
    lake.write_partition("teams", LEAGUE, DAY, normalize_records("teams", teams[1:], lineage).rows)  # type: ignore[index]
    lake.write_partition("futures", LEAGUE, DAY, normalize_records("futures", futures, lineage).rows)
    lake.write_partition("awards", LEAGUE, DAY, normalize_records("awards", [], lineage).rows)
    result = dg.materialize([future_odds], partition_key=KEY, resources={"pipeline": PipelineResource()},
                            instance=shared_instance())
    assert result.success
    failed = {e.check_name: e.metadata["violations"].value for e in result.get_asset_check_evaluations()
              if not e.passed}
    assert set(failed) == {"team_of_the_league"} and failed["team_of_the_league"] > 0
    landed = lake.read_partition("future_odds", LEAGUE, DAY)
    assert landed is not None and landed["future_id"].unique().to_list() == [futures[0]["id"]]
