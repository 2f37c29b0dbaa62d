"""docs/architecture.md's recipe "Add a table", followed end to end with a throwaway table.

(No `from __future__ import annotations`: Dagster reads the asset's `context` annotation live.)

`widgets` (one row per market of the partition, with a weight) is declared in the schema, gets its checks
derived from it, is landed by an ingestion asset built with the same decorator and landing function as the
five tables, shows up as a raw view in the warehouse, is modelled by a staging view and a mart with a SQL test,
and is documented by the schema-docs generator. The records stand in for the new endpoint of a source.
"""

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
import duckdb
import polars as pl
import pytest

from pipeline.defs.common.reporting import Landed
from pipeline.defs.common.resources import PipelineResource
from pipeline.defs.common.specs import partition_of
from pipeline.defs.ingestion.assets import ingestion_asset, land_partition, markets_partition
from pipeline.defs.sql_models.assets import sql_assets
from pipeline.engine.checks import CHECKS, PartitionContext, checks_for
from pipeline.engine.lake.store import Lake
from pipeline.engine.normalize.unified import normalize
from pipeline.engine.schema import MARKET_PLATFORMS, TABLES, Field, Table
from pipeline.engine.warehouse.project import load_project
from scripts import generate_docs
from tests.support.location import INGESTION_ASSETS, SETTINGS
from tests.support.runs import DAY

PLATFORM = "polymarket"
WIDGETS = Table(
    name="widgets",
    resource="Widget",
    doc="A throwaway table: one widget per market of the partition.",
    primary_key=("platform", "date", "id"),
    time_column=None,
    sort_key=("market_id", "id"),
    fields=(
        Field("id", dtype=pl.String(), required=True, doc="widget id"),
        Field("marketId", dtype=pl.String(), required=True, doc="the market it belongs to"),
        Field("platform", dtype=pl.String(), required=True, enum=tuple(MARKET_PLATFORMS)),
        Field("weight", dtype=pl.Float64(), non_negative=True, doc="a quantity"),
    ),
)
SQL = {
    "staging/stg_widgets.sql": """-- materialized: view
-- One row per widget, in its latest fetch.
SELECT platform, date AS day, id AS widget_id, market_id, weight
FROM raw.widgets
QUALIFY row_number() OVER (PARTITION BY platform, id ORDER BY _fetched_at DESC, date DESC) = 1
""",
    "marts/widget_weights.sql": """-- materialized: table
-- Total widget weight per platform and day.
SELECT platform, day, count(*) AS widgets, sum(weight) AS weight
FROM staging.stg_widgets
GROUP BY platform, day
""",
    "tests/widget_weights_unique_key.sql": """-- marts.widget_weights has one row per (platform, day).
SELECT platform, day, count(*) AS copies FROM marts.widget_weights GROUP BY platform, day HAVING count(*) > 1
""",
}


def _widgets_asset(stray_market: str | None = None) -> dg.AssetsDefinition:
    """Step 3 of the recipe: the table's ingestion asset. `stray_market` adds a widget of a market the partition
    does not hold, which the derived `references_partition_markets` check must report."""

    @ingestion_asset(SETTINGS, "widgets", deps=["markets"])
    def widgets(context: dg.AssetExecutionContext, pipeline: PipelineResource) -> Iterator[Landed]:
        platform, day = partition_of(context)
        market_ids = markets_partition(pipeline.lake(), platform, day)["id"].to_list()
        records = [{"id": f"w-{m}", "marketId": m, "platform": platform, "weight": 1.5}
                   for m in [*market_ids, *([stray_market] if stray_market else [])]]
        with pipeline.source(platform) as source:
            result = normalize("widgets", records, platform=platform, day=day,
                               source=pipeline.settings().source.value, fetched_at=datetime.now(UTC))
            yield from land_partition(context, pipeline, "widgets",
                                      PartitionContext(platform, day, frozenset(market_ids)), result, source)

    return widgets


@pytest.fixture
def widgets_declared(monkeypatch: pytest.MonkeyPatch) -> None:
    """Steps 1 and 2 of the recipe: the table in the schema registry, its checks derived from it."""
    monkeypatch.setitem(TABLES, "widgets", WIDGETS)
    monkeypatch.setitem(CHECKS, "widgets", checks_for(WIDGETS))


def _sql_project(root: Path) -> Path:
    """Step 4 of the recipe: a staging model, a mart and its test."""
    for name, text in SQL.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def _land(widgets: dg.AssetsDefinition) -> dg.ExecuteInProcessResult:
    markets = next(a for a in INGESTION_ASSETS if a.key == dg.AssetKey("markets"))
    return dg.materialize([markets, widgets], partition_key=dg.MultiPartitionKey(
        {"platform": PLATFORM, "date": DAY.isoformat()}), resources={"pipeline": PipelineResource()})


def test_a_new_table_lands_is_checked_served_modelled_and_documented(
    pipeline_env: Path, widgets_declared: None, tmp_path: Path
) -> None:
    result = _land(_widgets_asset())
    assert result.success
    markets = Lake(pipeline_env / "lake").read_partition("markets", PLATFORM, DAY)
    landed = Lake(pipeline_env / "lake").read_partition("widgets", PLATFORM, DAY)
    assert markets is not None and landed is not None
    assert landed.schema == WIDGETS.polars_schema
    assert sorted(landed["market_id"].to_list()) == sorted(markets["id"].to_list())
    checks = {e.check_name: e.passed for e in result.get_asset_check_evaluations()
              if e.asset_key == dg.AssetKey("widgets")}
    assert checks == {check.name: True for check in CHECKS["widgets"]}
    assert {"required_not_null", "unique_key", "references_partition_markets"} <= set(checks)

    project = load_project(_sql_project(tmp_path / "sql"))
    models = dg.materialize(sql_assets(project), resources={"pipeline": PipelineResource()})
    assert models.success
    assert all(e.passed for e in models.get_asset_check_evaluations())
    with duckdb.connect(str(pipeline_env / "warehouse.duckdb"), read_only=True) as db:
        assert db.sql("SELECT count(*) FROM raw.widgets").fetchall() == [(markets.height,)]
        assert db.sql("SELECT platform, day, widgets, weight FROM marts.widget_weights").fetchall() == [
            (PLATFORM, DAY, markets.height, 1.5 * markets.height)]

    assert "## `widgets`" in generate_docs.render()


def test_the_new_tables_derived_checks_report_a_bad_row(pipeline_env: Path, widgets_declared: None) -> None:
    result = _land(_widgets_asset(stray_market="not-a-market-of-the-day"))
    assert result.success  # a data problem is a reported check, never a crash
    failed = {e.check_name for e in result.get_asset_check_evaluations()
              if e.asset_key == dg.AssetKey("widgets") and not e.passed}
    assert failed == {"references_partition_markets"}
