"""dbt_like_sql in Dagster: an asset per SQL model, a blocking asset check per SQL test.

All models are one subsettable multi-asset, as dbt projects usually are in Dagster: a run builds the
selected models in one step, in dependency order, in one DuckDB session and under one writer lock (see
``pipeline.sql.build``). Each model is still its own asset, keyed by folder and name
(``["marts", "market_daily"]``), whose dependencies come from its SQL; ``raw.<table>`` is the ingestion
asset ``<table>``, so lineage runs from the API to the marts. A failed test fails its check and the
models downstream of the model it checks are not built in that run.

(No ``from __future__ import annotations`` here: Dagster reads the op's annotations at definition time.)
"""

from collections.abc import Iterator
from typing import Any

import dagster as dg
import polars as pl

from pipeline.resources import PipelineResource
from pipeline.sql.build import Built, NotBuilt, Tested, build
from pipeline.sql.project import Model, Project, Relation, SqlTest, load_project, sql_dir_from_env

OP_NAME = "dbt_like_sql"
OWNERS = ["team:analytics"]


def asset_key(relation: Relation) -> dg.AssetKey:
    """``raw.trades`` -> ``trades`` (the ingestion asset); ``marts.market_daily`` -> ``marts/market_daily``."""
    return dg.AssetKey([relation.name]) if relation.is_raw else dg.AssetKey([relation.schema, relation.name])


def load_sql_assets() -> list[dg.AssetsDefinition]:
    """The assets of the SQL folder that PMW_SQL_DIR names (default: the repository's dbt_like_sql/)."""
    return sql_assets(load_project(sql_dir_from_env()))


def sql_assets(project: Project) -> list[dg.AssetsDefinition]:
    """One multi-asset holding every model of ``project`` and, as its checks, every test."""
    if not project.models:
        return []
    models = {asset_key(relation): model for relation, model in project.models.items()}
    tests = {dg.AssetCheckKey(asset_key(test.subject), test.name): test for test in project.tests}

    @dg.multi_asset(
        name=OP_NAME,
        specs=[_spec(model) for model in project.models.values()],
        check_specs=[_check_spec(test) for test in project.tests],
        can_subset=True,
    )
    def dbt_like_sql(
        context: dg.AssetExecutionContext, pipeline: PipelineResource
    ) -> Iterator[dg.MaterializeResult | dg.AssetCheckResult]:
        settings = pipeline.settings()
        chosen_models = [models[key].relation for key in context.selected_asset_keys]
        chosen_tests = [tests[key] for key in context.selected_asset_check_keys]
        failed = []
        for outcome in build(project, settings.lake_dir, settings.warehouse_path, chosen_models, chosen_tests):
            if isinstance(outcome, Built):
                context.log.info("%s: %d rows in %.2f s", outcome.model.relation, outcome.rows, outcome.seconds)
                yield _materialization(outcome)
            elif isinstance(outcome, Tested):
                yield _check_result(outcome)
            elif isinstance(outcome, NotBuilt) and outcome.failed:
                context.log.error("%s failed: %s", outcome.model.relation, outcome.reason)
                failed.append(f"{outcome.model.relation}: {outcome.reason}")
            else:
                what = outcome.model.relation if isinstance(outcome, NotBuilt) else f"test {outcome.test.name}"
                context.log.warning("%s skipped: %s", what, outcome.reason)
        if failed:
            raise dg.Failure("SQL model(s) failed:\n" + "\n".join(failed))

    return [dbt_like_sql]


def _spec(model: Model) -> dg.AssetSpec:
    return dg.AssetSpec(
        key=asset_key(model.relation),
        deps=[asset_key(relation) for relation in model.reads],
        description=model.description or None,
        group_name=model.relation.schema,
        owners=OWNERS,
        kinds={"duckdb", "sql", *(["parquet"] if model.materialized == "table" else [])},
        code_version=model.code_version,
        skippable=True,
        metadata={"materialized": model.materialized, "sql_file": str(model.path)},
    )


def _check_spec(test: SqlTest) -> dg.AssetCheckSpec:
    return dg.AssetCheckSpec(
        test.name,
        asset=asset_key(test.subject),
        additional_deps=[asset_key(relation) for relation in test.reads[1:]],
        description=test.description or None,
        blocking=True,
    )


def _materialization(built: Built) -> dg.MaterializeResult:
    model = built.model
    return dg.MaterializeResult(
        asset_key=asset_key(model.relation),
        metadata={
            "dagster/row_count": built.rows,
            "dagster/table_name": str(model.relation),
            "dagster/column_schema": dg.TableSchema(
                columns=[dg.TableColumn(name, type_) for name, type_ in built.columns]
            ),
            "materialized": model.materialized,
            **({"path": dg.MetadataValue.path(str(built.path))} if built.path else {}),
            "seconds": round(built.seconds, 3),
            "sql": _sql_block(model.sql),
        },
    )


def _check_result(tested: Tested) -> dg.AssetCheckResult:
    test = tested.test
    metadata: dict[str, Any] = {"failing_rows": tested.failing_rows, "sql": _sql_block(test.sql)}
    if tested.error:
        metadata["error"] = tested.error
    if tested.failing_rows:
        metadata["preview"] = dg.MetadataValue.md(_markdown(tested.preview))
    return dg.AssetCheckResult(
        asset_key=asset_key(test.subject),
        check_name=test.name,
        passed=tested.passed,
        severity=dg.AssetCheckSeverity.ERROR,
        description=tested.error or test.description or None,
        metadata=metadata,
    )


def _sql_block(sql: str) -> dg.MetadataValue:
    return dg.MetadataValue.md(f"```sql\n{sql}\n```")


def _markdown(frame: pl.DataFrame) -> str:
    """A frame as a Markdown table, long values cut, for the check's preview of failing rows."""
    with pl.Config(
        tbl_formatting="MARKDOWN",
        tbl_hide_column_data_types=True,
        tbl_hide_dataframe_shape=True,
        fmt_str_lengths=40,
        tbl_cols=-1,
        tbl_rows=-1,
    ):
        return str(frame)
