"""The specs of the lake tables' assets and checks, read from the schema module and the check registry."""

import warnings
from collections.abc import Sequence
from datetime import date
from typing import Any

import dagster as dg

from pipeline.engine.checks import CHECKS, Check
from pipeline.engine.schema import lake_tables

OWNERS = ["team:data-platform"]
LAKE_KINDS = {"polars", "parquet"}


def column_schema(table: str) -> dg.TableSchema:
    """The table's columns, types and docs, as the `dagster/column_schema` metadata."""
    return dg.TableSchema(columns=[
        dg.TableColumn(c.name, c.field.type_label() if c.field else str(c.dtype), description=c.doc or None)
        for c in lake_tables()[table].columns
    ])


def table_spec(table: str, group: str, deps: list[str] | None = None) -> dg.AssetSpec:
    """The spec of a lake table landed by a multi-asset (sports, order books, traders): its doc, group, owners and
    column schema, read from the schema module."""
    return dg.AssetSpec(table, deps=deps or [], group_name=group, owners=OWNERS, kinds=LAKE_KINDS,
                        description=lake_tables()[table].doc, metadata={"dagster/column_schema": column_schema(table)})


def check_specs(table: str, partitions_def: dg.PartitionsDefinition) -> list[dg.AssetCheckSpec]:
    """Checks partitioned like their asset, so the UI shows a result per (platform, day), or (league, day).

    None is a Dagster-blocking check: a failed one is reported (severity ERROR, with examples) and its step
    succeeds, so the partition's other tables, which read the markets partition, land in the same run. The
    registry's `Check.blocking` is enforced by the SQL models instead (pipeline.defs.sql_models.assets): they
    hold back the models that read a table whose blocking check failed in their run.

    Partitioned checks are a preview feature of Dagster 1.13, chosen deliberately: without them a check
    shows only its latest run, whichever partition that was. Its warning is silenced here alone.
    """
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=dg.PreviewWarning, message=".*AssetCheckSpec.*")
        return [
            dg.AssetCheckSpec(check.name, asset=table, partitions_def=partitions_def, blocking=False,
                              description=f"{check.description}. {_what_a_failure_does(check)}",
                              additional_deps=list(check.reads))
            for check in CHECKS[table]
        ]


def _what_a_failure_does(check: Check) -> str:
    """What the UI's check page says a failure does: Dagster lists every ingestion check as non-blocking (its
    step must succeed for the partition's other tables to land), so the pipeline's own blocking is said here."""
    if check.blocking:
        return ("Blocking for the SQL models: a failure (severity ERROR) holds back the models that read this "
                "table; Dagster shows it as non-blocking because the partition's other tables still land.")
    return "A warning (severity WARN): a failure holds nothing back."


def tables_asset(name: str, tables: Sequence[str], group: str, partitions: dg.PartitionsDefinition, pool: str,
                 deps: list[str] | None = None, description: str | None = None) -> Any:
    """The decorator of a step that lands several lake tables (a multi-asset): each table's spec and checks,
    partitioned by `partitions`, the step in `pool`."""
    return dg.multi_asset(
        name=name,
        specs=[table_spec(table, group, deps) for table in tables],
        check_specs=[spec for table in tables for spec in check_specs(table, partitions)],
        partitions_def=partitions,
        pool=pool,
        description=description,
    )


def daily_partitions(first_day: date, dimension: str, keys: list[str]) -> dg.MultiPartitionsDefinition:
    """Partitions by day (UTC, from `first_day`) and by `dimension` (platform or league) over `keys`."""
    return dg.MultiPartitionsDefinition({
        "date": dg.DailyPartitionsDefinition(start_date=first_day.isoformat(), timezone="UTC"),
        dimension: dg.StaticPartitionsDefinition(keys),
    })


def partition_of(context: dg.AssetExecutionContext, dimension: str = "platform") -> tuple[str, date]:
    """The step's partition: its `dimension` key (platform, or league) and its day."""
    keys = context.partition_key.keys_by_dimension  # type: ignore[union-attr]
    return keys[dimension], date.fromisoformat(keys["date"])
