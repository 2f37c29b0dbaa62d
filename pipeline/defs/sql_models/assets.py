"""dbt_like_sql in Dagster: an asset per SQL model, a blocking asset check per SQL test.

All models are one subsettable multi-asset built in one step (pipeline.engine.warehouse.build), materialised once the
build is published; a model reading a table whose blocking ingestion check failed in the run is held back, and a
landed partition missing from the lake fails the step. Why, in docs/design.md, "The SQL models' checks".

(No ``from __future__ import annotations`` here: Dagster reads the op's annotations at definition time.)
"""

from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import dagster as dg
import polars as pl

from pipeline.defs.automation.budget import PartitionRef
from pipeline.defs.automation.lake_records import lost_partitions, recorded_partitions
from pipeline.defs.common.resources import PipelineResource
from pipeline.engine.checks import CHECKS
from pipeline.engine.config import Settings
from pipeline.engine.files import some_paths
from pipeline.engine.lake.storage import Location
from pipeline.engine.lake.store import Lake
from pipeline.engine.warehouse.build import Built, NotBuilt, Tested, build
from pipeline.engine.warehouse.project import DEFAULT_SQL_DIR, Model, Project, Relation, SqlTest, load_project

OP_NAME = "dbt_like_sql"
OWNERS = ["team:analytics"]


def asset_key(relation: Relation) -> dg.AssetKey:
    """``raw.trades`` -> ``trades`` (the ingestion asset); ``marts.market_daily`` -> ``marts/market_daily``."""
    return dg.AssetKey([relation.name]) if relation.is_raw else dg.AssetKey([relation.schema, relation.name])


def load_sql_assets(settings: Settings) -> list[dg.AssetsDefinition]:
    """The assets of the SQL folder that PMW_SQL_DIR names (default: the repository's dbt_like_sql/)."""
    return sql_assets(load_project(settings.sql_dir or DEFAULT_SQL_DIR))


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
        lake = Lake.of(settings)
        lost = lost_ingestion_files(context.instance, lake)
        if lost:
            raise dg.Failure(
                f"{len(lost)} partition file(s) that Dagster recorded as landed are gone or do not read, so the "
                f"models would leave their rows out: {some_paths(lost)}; rerun their partitions (pmw backfill, or "
                "let the backfill sensor refill them), then build again"
            )
        held = held_back(project, failed_ingestion_checks(context.instance, context.run.run_id))
        chosen_models = [models[key].relation for key in context.selected_asset_keys]
        chosen_tests = [tests[key] for key in context.selected_asset_check_keys]
        for relation in (r for r in chosen_models if r in held):
            context.log.warning("%s held back: %s", relation, "; ".join(map(str, held[relation])))
        for test in (t for t in chosen_tests if held.keys() & set(t.reads)):
            reads = ", ".join(str(r) for r in test.reads if r in held)
            context.log.warning("test %s not run: it reads %s, held back", test.name, reads)
        chosen_models = [r for r in chosen_models if r not in held]
        chosen_tests = [t for t in chosen_tests if not held.keys() & set(t.reads)]
        failed = []
        results: list[dg.MaterializeResult | dg.AssetCheckResult] = []  # told once the build is published
        for outcome in build(project, lake, settings.warehouse_path, chosen_models, chosen_tests,
                             settings.lock_timeout_s):
            if isinstance(outcome, Built):
                context.log.info("%s: %d rows in %.2f s", outcome.model.relation, outcome.rows, outcome.seconds)
                results.append(_materialization(outcome))
            elif isinstance(outcome, Tested):
                results.append(_check_result(outcome))
            elif isinstance(outcome, NotBuilt) and outcome.failed:
                context.log.error("%s failed: %s", outcome.model.relation, outcome.reason)
                failed.append(f"{outcome.model.relation}: {outcome.reason}")
            else:
                what = outcome.model.relation if isinstance(outcome, NotBuilt) else f"test {outcome.test.name}"
                context.log.warning("%s skipped: %s", what, outcome.reason)
        yield from results
        if failed:
            raise dg.Failure("SQL model(s) failed:\n" + "\n".join(failed))

    return [dbt_like_sql]


@dataclass(frozen=True)
class FailedIngestionCheck:
    """An ingestion check of severity ERROR, blocking in the registry, that failed on a partition."""

    table: str
    check: str
    partition: str | None  # "date|platform", as Dagster writes a multi-partition key
    violations: int | None

    def __str__(self) -> str:
        where = [_platform_and_day(self.partition)] if self.partition else []
        if self.violations is not None:
            where.append(f"{self.violations} violation{'' if self.violations == 1 else 's'}")
        return f"{self.table}.{self.check} failed" + (f" ({', '.join(where)})" if where else "")


def _platform_and_day(partition: str) -> str:
    """``2026-11-20|polymarket`` -> ``polymarket 2026-11-20``."""
    ref = PartitionRef.parse(partition)
    return f"{ref.platform} {ref.day}"


def lost_ingestion_files(instance: dg.DagsterInstance, lake: Lake) -> list[Location]:
    """The files of the ingestion partitions recorded as materialised in ``instance`` that are not in ``lake`` or do
    not read."""
    lost = lost_partitions(lake, recorded_partitions(instance))
    return sorted((lake.partition_path(table, ref.platform, ref.day) for table, refs in lost.items() for ref in refs),
                  key=str)


def failed_ingestion_checks(instance: dg.DagsterInstance, run_id: str) -> list[FailedIngestionCheck]:
    """The blocking ingestion checks whose latest evaluation in run ``run_id`` failed with severity ERROR."""
    blocking = {(table, check.name) for table, checks in CHECKS.items() for check in checks if check.blocking}
    records = instance.get_records_for_run(run_id=run_id, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION)
    latest: dict[tuple[str, str, str | None], dg.AssetCheckEvaluation] = {}
    for record in records.records:  # oldest first: a later evaluation of the same partition replaces one
        event = record.event_log_entry.dagster_event
        if event is not None:
            evaluation = event.asset_check_evaluation_data
            latest[(evaluation.asset_key.to_user_string(), evaluation.check_name, evaluation.partition)] = evaluation
    return [
        FailedIngestionCheck(table, check, partition, _violations(evaluation))
        for (table, check, partition), evaluation in latest.items()
        if (table, check) in blocking and not evaluation.passed
        and evaluation.severity == dg.AssetCheckSeverity.ERROR
    ]


def _violations(evaluation: dg.AssetCheckEvaluation) -> int | None:
    value = evaluation.metadata.get("violations")
    return int(value.value) if isinstance(value, dg.IntMetadataValue) and value.value is not None else None


def held_back(
    project: Project, failed: Collection[FailedIngestionCheck]
) -> Mapping[Relation, list[FailedIngestionCheck]]:
    """Every model of ``project`` that reads a table of ``failed``, directly or through other models, with
    the failed checks of the tables it reads."""
    if not failed:
        return {}
    held: dict[Relation, list[FailedIngestionCheck]] = {}
    for relation in project.models:
        tables = {read.name for model in (relation, *project.upstream(relation))
                  for read in project.models[model].reads if read.is_raw}
        checks = [check for check in failed if check.table in tables]
        if checks:
            held[relation] = checks
    return held


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
