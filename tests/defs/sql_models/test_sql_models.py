"""dbt_like_sql: SQL files become Dagster assets and blocking checks, and build without ever blocking an analyst."""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path

import dagster as dg
import polars as pl
import pytest
from filelock import FileLock

from pipeline.cli.main import main
from pipeline.cli.sql.models import run_sql, select_models
from pipeline.defs.common.resources import PipelineResource
from pipeline.defs.sql_models.assets import OP_NAME, asset_key, load_sql_assets, sql_assets
from pipeline.engine.config import Settings
from pipeline.engine.lake.store import Lake
from pipeline.engine.schema import lake_tables
from pipeline.engine.warehouse.build import Built, build
from pipeline.engine.warehouse.project import DEFAULT_SQL_DIR, Project, Relation, SqlProjectError, load_project
from pipeline.engine.warehouse.views import connect_read_only
from tests.support.frames import trades_frame
from tests.support.location import INGESTION_ASSETS, SPORTS_ASSETS, orderbook_round, trader_profiles
from tests.support.paths import REPO_ROOT
from tests.support.readme_sql import assert_readme_sql_answers
from tests.support.runs import DAY, land_directly, materialise
from tests.support.warehouse import model_files, models_dir

MARKET_DAILY = dg.AssetKey(["marts", "market_daily"])


def write_project(root: Path, files: dict[str, str]) -> Path:
    for name, sql in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(sql)
    return root


def build_models(project: Project, selection: Sequence[dg.AssetKey] | None = None) -> dg.ExecuteInProcessResult:
    """Every model and test of ``project`` (or the selected models and their tests) in one Dagster run."""
    return dg.materialize(
        sql_assets(project),
        selection=dg.AssetSelection.assets(*selection) if selection else None,
        resources={"pipeline": PipelineResource()},
        instance=dg.DagsterInstance.ephemeral(),  # the SQL asset reads its records
        raise_on_error=False,
    )


def built_keys(result: dg.ExecuteInProcessResult) -> set[dg.AssetKey]:
    return {m.asset_key for m in result.asset_materializations_for_node(OP_NAME)}


def checks(result: dg.ExecuteInProcessResult) -> dict[str, dg.AssetCheckEvaluation]:
    return {e.check_name: e for e in result.get_asset_check_evaluations()}


def query(data_dir: Path, sql: str) -> pl.DataFrame:
    with connect_read_only(data_dir / "warehouse.duckdb") as connection:
        return connection.sql(sql).pl()


# The repository's project: assets, lineage and checks.


def test_every_sql_file_is_an_asset_keyed_by_folder_and_name_with_lineage_from_the_api() -> None:
    project = load_project(DEFAULT_SQL_DIR)
    defs = dg.Definitions(assets=[*INGESTION_ASSETS, orderbook_round, trader_profiles, *SPORTS_ASSETS,
                                  *sql_assets(project)],
                          resources={"pipeline": PipelineResource()})
    graph = defs.resolve_asset_graph()
    sql_files = sorted(p for p in DEFAULT_SQL_DIR.rglob("*.sql") if p.parent.name != "tests")
    assert {asset_key(r) for r in project.models} == {dg.AssetKey([p.parent.name, p.stem]) for p in sql_files}
    assert graph.get(dg.AssetKey(["staging", "stg_trades"])).parent_keys == {dg.AssetKey("trades")}
    assert graph.get(MARKET_DAILY).parent_keys == {
        dg.AssetKey(["staging", name]) for name in ("stg_trades", "stg_market_outcomes", "stg_price_history")
    } | {dg.AssetKey(["marts", "dim_markets"])}
    for relation in project.models:
        upstream = dg.AssetSelection.assets(asset_key(relation)).upstream().resolve(graph)
        assert upstream & {dg.AssetKey(table) for table in lake_tables()}, relation
    tests = sorted(p.stem for p in (DEFAULT_SQL_DIR / "tests").glob("*.sql"))
    sql_checks = [k for k in graph.asset_check_keys if len(k.asset_key.path) == 2]
    assert sorted(k.name for k in sql_checks) == tests
    assert all(graph.get_check_spec(k).blocking for k in sql_checks)
    reference = dg.AssetCheckKey(dg.AssetKey(["staging", "stg_trades"]), "trades_reference_dim_markets")
    assert graph.get_check_spec(reference).additional_deps[0].asset_key == dg.AssetKey(["marts", "dim_markets"])


@pytest.mark.slow
def test_one_run_lands_a_partition_builds_every_model_and_every_sql_test_passes(pipeline_env: Path) -> None:
    assert land_directly("polymarket").success  # the other platform's partition, beside the run's
    project = load_project(DEFAULT_SQL_DIR)
    result = dg.materialize(
        [*INGESTION_ASSETS, *sql_assets(project)],
        partition_key=dg.MultiPartitionKey({"platform": "kalshi", "date": DAY.isoformat()}),
        resources={"pipeline": PipelineResource()},
        instance=dg.DagsterInstance.ephemeral(),  # the SQL asset reads its records
        raise_on_error=False,
    )
    assert result.success
    assert built_keys(result) == {asset_key(r) for r in project.models}
    sql_checks = {name: e for name, e in checks(result).items() if name in {t.name for t in project.tests}}
    assert len(sql_checks) == len(project.tests)
    assert [name for name, e in sql_checks.items() if not e.passed] == []
    market_daily = next(m for m in result.asset_materializations_for_node(OP_NAME) if m.asset_key == MARKET_DAILY)
    assert market_daily.metadata["dagster/row_count"].value > 0
    assert market_daily.metadata["sql"].value.startswith("```sql\n-- materialized: table")

    views = query(pipeline_env, "SELECT schema_name, view_name, sql FROM duckdb_views() WHERE NOT internal")
    by_name = {f"{s}.{v}": sql for s, v, sql in views.iter_rows()}
    assert "FROM raw.trades" in by_name["staging.stg_trades"]
    assert "read_parquet" in by_name["marts.market_daily"]
    assert model_files(pipeline_env / "lake", "marts", "market_daily")
    assert query(pipeline_env, "SELECT DISTINCT platform FROM marts.market_daily ORDER BY 1")["platform"].to_list() == [
        "kalshi",
        "polymarket",
    ]
    assert_market_daily_matches_the_lake(pipeline_env)
    assert_readme_sql_answers(pipeline_env / "warehouse.duckdb")  # pmw query on what the README shows


@pytest.mark.parametrize("readings", ["", "price_keys=name,member_ids=platform"])
def test_every_outcome_has_its_prices_and_every_market_its_event_and_series_whichever_keys_and_ids_are_served(
        pipeline_env: Path, monkeypatch: pytest.MonkeyPatch, readings: str) -> None:
    monkeypatch.setenv("PMW_SANDBOX_READINGS", readings)
    for platform in ("polymarket", "kalshi"):
        assert land_directly(platform, assets=["markets", "events", "series"]).success
    assert run_sql(["+marts.dim_markets", "+staging.stg_market_outcomes"], say=lambda _: None,
                   instance=dg.DagsterInstance.ephemeral())
    outcomes = query(pipeline_env, "SELECT o.*, m.status FROM staging.stg_market_outcomes AS o "
                                   "JOIN staging.stg_markets AS m USING (platform, market_id)")
    assert set(outcomes["platform"]) == {"polymarket", "kalshi"}
    quoted = pl.col("bid").is_not_null() & pl.col("ask").is_not_null()
    unpriced = outcomes.filter(pl.col("current_price").is_null() | ((pl.col("status") != "resolved") & ~quoted))
    assert unpriced.is_empty(), unpriced.head(3)
    markets = query(pipeline_env, "SELECT * FROM marts.dim_markets")
    unjoined = markets.filter(pl.col("event_title").is_null() | pl.col("series_title").is_null())
    assert unjoined.is_empty(), unjoined.select("platform", "market_id", "event_id", "series_id").head(3)
    lake = Lake(pipeline_env / "lake")
    events = pl.concat([frame for platform in ("polymarket", "kalshi")
                        if (frame := lake.read_partition("events", platform, DAY)) is not None])
    assert set(markets["event_id"]) == set(events["id"])  # the events' own ids, whichever the markets named


def assert_market_daily_matches_the_lake(data_dir: Path) -> None:
    """VWAP and volume recomputed in polars from the lake's Parquet files, independently of the SQL."""
    lake = Lake(data_dir / "lake")
    markets = pl.concat([lake.read_partition("markets", p, DAY) for p in ("kalshi", "polymarket")])  # type: ignore[misc]
    trades = pl.concat([lake.read_partition("trades", p, DAY) for p in ("kalshi", "polymarket")])  # type: ignore[misc]
    trades = trades.filter(pl.col("taker").fill_null(True))  # a match is counted once, by its taker's row
    outcomes = markets.select(
        "platform",
        pl.col("id").alias("market_id"),
        pl.col("outcomes").list.get(0).struct.field("name").alias("first"),
        pl.col("outcomes").list.get(1).struct.field("name").alias("second"),
        pl.col("outcomes").list.len().alias("outcome_count"),
    )
    # Prices of the first outcome: a trade of the other side of a two-outcome market at p is one at 1 - p.
    first_price = (
        pl.when(pl.col("outcome") == pl.col("first"))
        .then(pl.col("price"))
        .when((pl.col("outcome_count") == 2) & (pl.col("outcome") == pl.col("second")))
        .then(1 - pl.col("price"))
    )
    expected = (
        trades.join(outcomes, on=["platform", "market_id"], how="left")
        .with_columns(first_price.alias("p"))
        .group_by("platform", "market_id")
        .agg(
            pl.len().alias("trades"),
            (pl.col("price") * pl.col("size")).sum().alias("volume"),
            ((pl.col("p") * pl.col("size")).sum() / pl.col("size").filter(pl.col("p").is_not_null()).sum()).alias(
                "vwap"
            ),
            pl.col("outcome").n_unique().alias("outcomes"),
        )
    )
    mart = query(
        data_dir, f"SELECT platform, market_id, trades, volume, vwap FROM marts.market_daily WHERE day = '{DAY}'"
    )
    compared = expected.join(mart, on=["platform", "market_id"], how="full", suffix="_mart", coalesce=True)
    assert compared.height == expected.height == mart.height
    assert (compared["trades"] == compared["trades_mart"]).all()
    assert (compared["volume"] - compared["volume_mart"]).abs().max() < 1e-6
    assert (compared["vwap"] - compared["vwap_mart"]).abs().max() < 1e-12
    # One market in particular: the busiest, with trades on both of its outcomes (so 1 - p is exercised).
    busiest = compared.filter(pl.col("outcomes") == 2).sort("volume", descending=True).row(0, named=True)
    assert busiest["vwap"] == pytest.approx(busiest["vwap_mart"], abs=1e-12)
    assert busiest["volume"] == pytest.approx(busiest["volume_mart"], rel=1e-12)


# Done when: a new .sql file reading a mart is a new asset downstream of it, with no Python change.


def test_a_new_sql_file_reading_a_mart_becomes_an_asset_downstream_of_it(
    pipeline_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sql_dir = tmp_path / "dbt_like_sql"
    shutil.copytree(DEFAULT_SQL_DIR, sql_dir)
    write_project(
        sql_dir,
        {
            "marts/busiest_markets.sql": (
                "-- materialized: table\n-- The ten market-days with the most volume.\n"
                "SELECT platform, market_id, day, volume FROM marts.market_daily ORDER BY volume DESC LIMIT 10\n"
            )
        },
    )
    monkeypatch.setenv("PMW_SQL_DIR", str(sql_dir))
    assets = load_sql_assets(Settings.from_env(credentials=False))  # what pipeline.definitions loads
    graph = dg.Definitions(assets=[*INGESTION_ASSETS, *assets], resources={"pipeline": PipelineResource()})
    graph = graph.resolve_asset_graph()
    new = dg.AssetKey(["marts", "busiest_markets"])
    assert graph.get(new).parent_keys == {MARKET_DAILY}
    assert new in dg.AssetSelection.assets(dg.AssetKey("trades")).downstream().resolve(graph)
    assert graph.get(new).description == "The ten market-days with the most volume."

    result = build_models(load_project(sql_dir))  # on an empty lake, every model builds with no rows
    assert result.success
    assert new in built_keys(result)
    assert query(pipeline_env, "SELECT count(*) AS n FROM marts.busiest_markets")["n"].to_list() == [0]


# Done when: a SQL test that finds rows fails its check and stops the models downstream in the same run.


def test_a_failing_sql_test_fails_its_check_and_stops_the_models_downstream(pipeline_env: Path) -> None:
    Lake(pipeline_env / "lake").write_partition("trades", "kalshi", DAY, trades_frame("kalshi", DAY, 20, price=1.5))
    project = load_project(DEFAULT_SQL_DIR)
    result = build_models(project)
    assert not result.success
    failed = checks(result)["trade_prices_in_unit_interval"]
    assert not failed.passed
    assert failed.metadata["failing_rows"].value == 20
    preview = failed.metadata["preview"].value  # the first failing rows, as a Markdown table
    assert "| price |" in preview.splitlines()[0] and preview.count("| 1.5 ") == 5
    built = built_keys(result)
    downstream = {asset_key(r) for r in project.downstream(Relation("staging", "stg_trades"))}
    assert downstream == {dg.AssetKey(["marts", n])
                          for n in ("market_daily", "platform_daily", "category_volume", "cross_platform_daily")}
    assert not built & downstream
    assert {dg.AssetKey(["staging", "stg_trades"]), dg.AssetKey(["marts", "dim_markets"])} <= built
    assert dg.AssetKey(["marts", "price_candles_hourly"]) in built  # not downstream of the failing test
    assert model_files(pipeline_env / "lake", "marts", "market_daily") == []
    assert "market_daily_unique_key" not in checks(result)  # its model did not build, so it did not run


TINY = {
    "staging/numbers.sql": "-- Three numbers.\nSELECT n FROM range(3) AS t (n)\n",
    "marts/doubled.sql": "-- materialized: table\nSELECT n * 2 AS n FROM staging.numbers\n",
    "marts/broken.sql": "-- materialized: table\nSELECT no_such_column FROM staging.numbers\n",
    "marts/after_broken.sql": "SELECT * FROM marts.broken\n",
}


def test_a_failing_model_fails_the_run_naming_its_file_and_skips_only_its_downstream(
    pipeline_env: Path, tmp_path: Path
) -> None:
    project = load_project(write_project(tmp_path / "sql", TINY))
    result = build_models(project)
    assert not result.success
    assert built_keys(result) == {dg.AssetKey(["staging", "numbers"]), dg.AssetKey(["marts", "doubled"])}
    [failure] = [e for e in result.all_events if e.is_step_failure]
    message = failure.step_failure_data.error.to_string()  # type: ignore[union-attr]
    assert str(tmp_path / "sql" / "marts" / "broken.sql") in message and "no_such_column" in message
    assert query(pipeline_env, "SELECT sum(n) AS total FROM marts.doubled")["total"].to_list() == [6]


def test_a_build_fails_naming_a_recorded_partition_whose_file_is_gone(pipeline_env: Path, tmp_path: Path) -> None:
    """Dagster recorded the partition as landed; its trades file has gone since: every model reading trades
    would leave its rows out, so the build fails naming the file instead of building short marts."""
    instance = dg.DagsterInstance.ephemeral()
    assert materialise("kalshi", instance=instance).success
    gone = Lake(pipeline_env / "lake").partition_path("trades", "kalshi", DAY)
    gone.unlink()
    project = load_project(write_project(tmp_path / "sql", {"marts/n.sql": "SELECT count(*) FROM raw.trades"}))
    result = dg.materialize(sql_assets(project), resources={"pipeline": PipelineResource()}, instance=instance,
                            raise_on_error=False)
    assert not result.success
    [failure] = result.get_step_failure_events()
    message = failure.step_failure_data.error.to_string()  # type: ignore[union-attr]
    assert str(gone) in message and "recorded as landed" in message
    assert model_files(pipeline_env / "lake", "marts", "n") == []


def test_a_selected_model_reads_its_unselected_inputs_as_last_built(pipeline_env: Path, tmp_path: Path) -> None:
    files = {k: v for k, v in TINY.items() if "broken" not in k}
    project = load_project(write_project(tmp_path / "sql", files))
    assert build_models(project).success
    tables = models_dir(pipeline_env / "lake")
    assert model_files(pipeline_env / "lake", "marts", "doubled") and not list(tables.glob("*/staging"))  # header
    result = build_models(project, selection=[dg.AssetKey(["marts", "doubled"])])
    assert result.success
    assert built_keys(result) == {dg.AssetKey(["marts", "doubled"])}


def test_builds_take_turns_on_the_writer_lock(pipeline_env: Path, tmp_path: Path) -> None:
    project = load_project(write_project(tmp_path / "sql", {k: v for k, v in TINY.items() if "broken" not in k}))
    lock_dir = models_dir(pipeline_env / "lake")
    lock_dir.mkdir(parents=True)
    outcomes: list[object] = []
    other_build = build(project, pipeline_env / "lake", pipeline_env / "warehouse.duckdb", project.models, ())
    with FileLock(lock_dir / ".build.lock"):  # a build in progress elsewhere
        run = threading.Thread(target=lambda: outcomes.extend(other_build))
        run.start()
        run.join(timeout=1.0)
        assert run.is_alive() and not outcomes
    run.join(timeout=60)
    assert [type(o) for o in outcomes] == [Built, Built] and model_files(pipeline_env / "lake", "marts", "doubled")


# An analyst holding the warehouse open read-only never makes a run fail or wait.

ANALYST = """
import sys
from pathlib import Path
from pipeline.engine.warehouse.views import connect_read_only

connection = connect_read_only(Path(sys.argv[1]))
stop = Path(sys.argv[2])
last = None
while True:
    stopping = stop.exists()
    (count,) = connection.execute("SELECT sum(trades) FROM marts.trade_count").fetchall()[0]
    if count != last:
        print(count, flush=True)
        last = count
    if stopping:
        break
"""

TRADE_COUNT = "-- materialized: table\nSELECT platform, count(*) AS trades FROM raw.trades GROUP BY platform\n"


def test_an_analyst_holding_the_warehouse_neither_fails_a_build_nor_sees_a_part_of_one(
    pipeline_env: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    lake = Lake(pipeline_env / "lake")
    sql_dir = write_project(tmp_path / "sql", {"marts/trade_count.sql": TRADE_COUNT})
    lake.write_partition("trades", "kalshi", DAY, trades_frame("kalshi", DAY, 100))
    assert build_models(load_project(sql_dir)).success
    stop = tmp_path / "stop"
    analyst = subprocess.Popen(
        [sys.executable, "-c", ANALYST, str(pipeline_env / "warehouse.duckdb"), str(stop)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")])},
    )
    try:
        assert analyst.stdout.readline() == "100\n", analyst.stderr.read()  # type: ignore[union-attr]
        with caplog.at_level(logging.WARNING, logger="pipeline.engine.warehouse"):
            day = DAY + timedelta(days=1)
            lake.write_partition("trades", "polymarket", day, trades_frame("polymarket", day, 50))
            write_project(sql_dir, {"marts/trade_days.sql": "SELECT DISTINCT date FROM raw.trades"})
            assert build_models(load_project(sql_dir)).success  # the file is held: built, not published
            said = [r.getMessage() for r in caplog.records if r.name.startswith("pipeline.engine.warehouse")]
            assert any("in use elsewhere" in m for m in said) and any("is not published" in m for m in said)
        stop.touch()
        output, errors = analyst.communicate(timeout=60)
    finally:
        analyst.kill()
    assert analyst.returncode == 0, errors
    assert errors == ""  # no query overlapped a rewrite: a build never rewrites a file that readers read
    assert output.split() == []  # the open session read the build it opened on, whole, to its end
    assert build_models(load_project(sql_dir)).success  # the file is free again: the next build publishes
    assert query(pipeline_env, "SELECT sum(trades) AS n FROM marts.trade_count")["n"].to_list() == [150]
    assert query(pipeline_env, "SELECT count(*) AS n FROM marts.trade_days")["n"].to_list() == [2]


# The command line.


def test_pmw_sql_builds_the_selection_and_reports_each_model_and_test(
    pipeline_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["sql", "--select", "+dim_markets"]) == 0
    out = capsys.readouterr().out
    assert "marts.dim_markets                  table           0 rows" in out
    assert "pass test dim_markets_unique_key on marts.dim_markets" in out
    assert "stg_trades" not in out and "market_daily" not in out
    assert main(["sql", "--select", "no_such_model"]) == 2
    assert "no model 'no_such_model'" in capsys.readouterr().err


def test_selectors_follow_dbt() -> None:
    project = load_project(DEFAULT_SQL_DIR)
    names = lambda *selectors: {str(r) for r in select_models(project, selectors)}  # noqa: E731
    assert names("market_daily") == {"marts.market_daily"}
    assert names("marts.dim_markets+") == {
        "marts.dim_markets",
        "marts.market_daily",
        "marts.platform_daily",
        "marts.category_volume",
        "marts.cross_platform_daily",
    }
    assert names("+stg_market_outcomes") == {"staging.stg_market_outcomes", "staging.stg_markets",
                                             "staging.stg_member_ids"}
    assert names() == {str(r) for r in project.models}


# Clear errors for bad SQL files, each naming the file.

BAD_PROJECTS = {
    "two statements": ({"marts/x.sql": "SELECT 1; SELECT 2;"}, "marts/x.sql", "exactly one SELECT statement, found 2"),
    "no statement": ({"marts/x.sql": "-- nothing yet\n"}, "marts/x.sql", "exactly one SELECT statement, found 0"),
    "not a select": ({"marts/x.sql": "CREATE TABLE t AS SELECT 1"}, "marts/x.sql", "SELECT statement, found CREATE"),
    "unparsable": ({"marts/x.sql": "SELECT (1"}, "marts/x.sql", "cannot parse the SQL"),
    "unqualified table": ({"marts/x.sql": "SELECT * FROM trades"}, "marts/x.sql", "'trades' needs its schema"),
    "unknown model": ({"marts/x.sql": "SELECT * FROM marts.nope"}, "marts/x.sql", "not a model marts/nope.sql"),
    "unknown raw table": ({"marts/x.sql": "SELECT * FROM raw.nope"}, "marts/x.sql", "raw.nope, which is not one of"),
    "materialisation": ({"marts/x.sql": "-- materialized: incremental\nSELECT 1"}, "marts/x.sql", "view, table"),
    "nested folder": ({"marts/a/x.sql": "SELECT 1"}, "marts/a/x.sql", "<schema>/<name>.sql"),
    "raw folder": ({"raw/x.sql": "SELECT 1"}, "raw/x.sql", "belongs to the ingested tables"),
    "self reference": ({"marts/x.sql": "SELECT * FROM marts.x"}, "marts/x.sql", "reads itself"),
    "cycle": ({"marts/a.sql": "SELECT * FROM marts.b", "marts/b.sql": "SELECT * FROM marts.a"}, "marts/a.sql", "cycle"),
    "test of raw": (
        {"marts/a.sql": "SELECT 1 AS x", "tests/t.sql": "SELECT * FROM raw.trades"},
        "tests/t.sql",
        "a test must read a model",
    ),
    "test reading past its subject": (
        {
            "staging/a.sql": "SELECT 1 AS x",
            "marts/b.sql": "SELECT * FROM staging.a",
            "tests/t.sql": "SELECT * FROM staging.a JOIN marts.b USING (x)",
        },
        "tests/t.sql",
        "reads marts.b, which is built from staging.a",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_PROJECTS))
def test_an_unusable_sql_file_is_an_error_naming_it(case: str, tmp_path: Path) -> None:
    files, culprit, message = BAD_PROJECTS[case]
    with pytest.raises(SqlProjectError) as raised:
        load_project(write_project(tmp_path, files))
    assert str(tmp_path / culprit) in str(raised.value)
    assert message in str(raised.value)


def test_ctes_and_table_functions_are_not_dependencies(tmp_path: Path) -> None:
    project = load_project(
        write_project(
            tmp_path,
            {
                "staging/a.sql": "SELECT 1 AS x",
                "marts/b.sql": "WITH a AS (SELECT * FROM staging.a) SELECT * FROM a, range(2) r (i), raw.trades",
            },
        )
    )
    assert project.models[Relation("marts", "b")].reads == (Relation("staging", "a"), Relation("raw", "trades"))


def test_the_sql_folder_must_exist(tmp_path: Path) -> None:
    with pytest.raises(SqlProjectError, match="PMW_SQL_DIR"):
        load_project(tmp_path / "missing")


def test_pmw_sql_names_a_failure_that_is_no_models_with_its_cause_and_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue "Nothing lost", point 12: a warehouse that cannot be opened (here a folder in its place) fails the
    build, and the output says why (a data dir that is a file is refused before anything runs)."""
    not_a_file = tmp_path / "data" / "warehouse.duckdb"
    not_a_file.mkdir(parents=True)
    monkeypatch.setenv("PMW_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    assert main(["sql"]) == 1
    said = capsys.readouterr().out
    assert f"FAILED {OP_NAME}:" in said and str(not_a_file) in said, said
