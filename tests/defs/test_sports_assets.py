"""The sports assets through Dagster on one league's day of the sandbox, then the sports marts: every table lands
with every check passing, a polars recomputation of marts.future_odds_daily from the lake matches it, a platform
missing from a future leaves no null price, an outcome priced by one platform keeps that price, and a failing
check is reported, never raised.

"""

from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from pipeline.cli.sql import run_sql
from pipeline.defs.resources import PipelineResource
from pipeline.defs.sports.assets import SPORTS_ASSETS, future_odds
from pipeline.engine.lake.store import Lake
from pipeline.engine.schema import SPORTS_PLATFORMS, SPORTS_TABLES
from pipeline.engine.warehouse.views import connect_read_only
from pmw_sandbox import plug
from tests.support.runs import shared_instance
from tests.support.world import PIPELINE_WORLD, pipeline_sandbox

Landed = tuple[Path, dg.ExecuteInProcessResult, list[str]]
LEAGUE = "nhl"
DAY = PIPELINE_WORLD.end_day
KEY = dg.MultiPartitionKey({"league": LEAGUE, "date": DAY.isoformat()})
MART_KEY = ["league", "day", "kind", "future_id", "outcome_key"]


def _sandbox_env(monkeypatch: pytest.MonkeyPatch, root: Path) -> None:
    for name in ("PMW_API_URL", "PMW_API_KEY", "PMW_PLATFORMS", "PMW_SANDBOX_FAULTS", "PMW_SANDBOX_READINGS"):
        monkeypatch.delenv(name, raising=False)
    for name, value in {"PMW_SOURCE": "sandbox", "PMW_DATA_DIR": str(root / "data"),
                        "PMW_SANDBOX_SEED": str(PIPELINE_WORLD.seed), "PMW_SANDBOX_END": DAY.isoformat(),
                        "PMW_RATE_LIMIT_DB": str(root / "budget.sqlite")}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(plug, "sandbox_app", pipeline_sandbox)


@pytest.fixture(scope="module")
def landed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Landed]:
    """One league's day landed through Dagster, and the sports marts built with their SQL tests."""
    root = tmp_path_factory.mktemp("sports")
    with pytest.MonkeyPatch.context() as monkeypatch:
        _sandbox_env(monkeypatch, root)
        resource = PipelineResource()
        result = dg.materialize(SPORTS_ASSETS, partition_key=KEY, resources={"pipeline": resource},
                                instance=shared_instance())
        said: list[str] = []
        assert run_sql(["+future_odds_daily", "+platform_margin_daily"], resource, said.append), said
        yield root / "data", result, said


def _mart(data: Path, name: str) -> pl.DataFrame:
    with connect_read_only(data / "warehouse.duckdb") as db:
        return pl.from_arrow(db.sql(f"SELECT * FROM marts.{name}").to_arrow_table())  # type: ignore[return-value]


def test_every_table_lands_checked_and_the_marts_build(landed: Landed) -> None:
    data, result, said = landed
    assert result.success
    evaluations = result.get_asset_check_evaluations()
    assert evaluations and all(e.passed for e in evaluations)
    lake = Lake(data / "lake")
    counts = {table: lake.row_count(table, LEAGUE, DAY) for table in SPORTS_TABLES}
    assert counts["leagues"] == 1 and counts["teams"] == 32 and all(counts.values()), counts
    assert any("pass test future_odds_daily_consensus_sums_to_one" in line for line in said)
    margins = _mart(data, "platform_margin_daily")
    assert set(margins["platform"]) == set(SPORTS_PLATFORMS)
    assert (margins["average_overround"] > 0).all() and margins["average_overround"].n_unique() == margins.height


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


def test_polars_recomputes_the_consensus_and_spread_of_the_mart(
    landed: Landed
) -> None:
    data, _, _ = landed
    odds = Lake(data / "lake").read_partition("future_odds", LEAGUE, DAY)
    assert odds is not None
    mart = _mart(data, "future_odds_daily").select(*MART_KEY, "platforms", "consensus_probability", "spread")
    assert_frame_equal(_recomputed(odds).sort(MART_KEY), mart.sort(MART_KEY), check_exact=False, rtol=1e-9)


def test_missing_platforms_leave_no_null_price_and_a_lone_price_stays(
    landed: Landed
) -> None:
    data, _, _ = landed
    lake = Lake(data / "lake")
    futures = lake.read_partition("futures", LEAGUE, DAY)
    odds = lake.read_partition("future_odds", LEAGUE, DAY)
    assert futures is not None and odds is not None
    listing = futures.select("id", *(pl.col("platform_markets").struct.field(p).is_not_null().alias(p)
                                     for p in SPORTS_PLATFORMS))
    partial = listing.filter(~pl.all_horizontal(*SPORTS_PLATFORMS))
    assert partial.height, "the world has futures that some platform does not list"
    mart = _mart(data, "future_odds_daily")
    prices = mart.explode("platform_prices").unnest("platform_prices")
    assert prices.null_count().select("platform", "implied_probability", "fair_probability").sum_horizontal()[0] == 0
    for row in partial.iter_rows(named=True):
        absent = [p for p in SPORTS_PLATFORMS if not row[p]]
        assert prices.filter((pl.col("future_id") == row["id"]) & pl.col("platform").is_in(absent)).is_empty()
    lone = mart.filter(pl.col("platforms") == 1).explode("platform_prices").unnest("platform_prices")
    assert lone.height, "some outcome is priced by one platform only"
    for row in lone.head(5).iter_rows(named=True):
        landed_price = odds.filter((pl.col("future_id") == row["future_id"]) & (pl.col("platform") == row["platform"])
                                   & (pl.col("outcome_name") == row["outcome_name"]))["implied_probability"]
        assert landed_price.to_list() == [row["implied_probability"]] and row["spread"] == 0


def test_a_failing_check_is_reported_and_the_partition_still_lands(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, landed: Landed
) -> None:
    source_lake = Lake(landed[0] / "lake")
    _sandbox_env(monkeypatch, tmp_path)
    lake = Lake(tmp_path / "data" / "lake")
    for table in ("futures", "awards", "teams"):
        rows = source_lake.read_partition(table, LEAGUE, DAY)
        assert rows is not None
        if table == "teams":
            rows = rows.filter(pl.col("router_id") != rows["router_id"].min())  # a team the odds name, gone
        lake.write_partition(table, LEAGUE, DAY, rows)
    result = dg.materialize([future_odds], partition_key=KEY, resources={"pipeline": PipelineResource()},
                            instance=shared_instance())
    assert result.success
    failed = {e.check_name: e.metadata["violations"].value for e in result.get_asset_check_evaluations()
              if not e.passed}
    assert set(failed) == {"team_of_the_league"} and failed["team_of_the_league"] > 0
    assert lake.row_count("future_odds", LEAGUE, DAY) == source_lake.row_count("future_odds", LEAGUE, DAY)
