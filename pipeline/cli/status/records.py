"""What `pmw status` reads from the Dagster instance: the partitions whose latest materialisation was incomplete
and the ingestion checks whose latest evaluation on a partition failed, for the partitions of a window.

The freshness check (`yesterday_landed`) is left out: `pmw status` judges yesterday from the lake itself, and
that check's latest evaluation may be about another day.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path

import dagster as dg
from dagster._core.event_api import PartitionKeyFilter  # not exported: the partition_filter of a check's history
from dagster._core.storage.asset_check_execution_record import (  # not exported: the status a check's records carry
    AssetCheckExecutionRecordStatus,
)

from pipeline.cli.common.instance import pmw_instance
from pipeline.cli.status.facts import FailedCheck, Recorded
from pipeline.defs.automation.budget import PartitionRef
from pipeline.engine.checks import CHECKS
from pipeline.engine.config import ConfigError
from pipeline.engine.schema import TABLES


def home_records(data_dir: Path, first: date, last: date) -> Recorded:
    """`read_records` of pmw's instance: DAGSTER_HOME's, else the data dir's own; ConfigError when DAGSTER_HOME
    is not an instance's home."""
    try:
        instance = pmw_instance(data_dir)
    except dg.DagsterInvariantViolationError as error:  # not a directory, not absolute: Dagster says which
        raise ConfigError(str(error)) from None
    return read_records(instance, first, last)


def read_records(instance: dg.DagsterInstance, first: date, last: date) -> Recorded:
    incomplete = {(table, ref.platform, ref.day): markets for table in TABLES
                  for ref, markets in _incomplete(instance, table, first, last).items()}
    return Recorded(incomplete, _failed_checks(instance, first, last))


def _in_window(key: str | None, first: date, last: date) -> PartitionRef | None:
    """The partition of a key when it is a (date, platform) key of the window, else None."""
    try:
        ref = PartitionRef.parse(key or "")
    except ValueError:
        return None
    return ref if first <= ref.day <= last else None


def _incomplete(instance: dg.DagsterInstance, table: str, first: date, last: date) -> dict[PartitionRef, int]:
    """The window's partitions whose latest materialisation says `complete: False`, with its incomplete markets."""
    asset = dg.AssetKey(table)
    latest = instance.event_log_storage.get_latest_storage_id_by_partition(
        asset, dg.DagsterEventType.ASSET_MATERIALIZATION)
    ids = [storage_id for key, storage_id in latest.items() if _in_window(key, first, last)]
    if not ids:
        return {}
    records = instance.fetch_materializations(dg.AssetRecordsFilter(asset_key=asset, storage_ids=ids),
                                              limit=len(ids)).records
    found: dict[PartitionRef, int] = {}
    for record in records:
        materialization = record.asset_materialization
        ref = _in_window(record.partition_key, first, last)
        if materialization is None or ref is None:
            continue
        metadata = {name: value.value for name, value in materialization.metadata.items()}
        if metadata.get("complete") is False:
            found[ref] = int(metadata.get("incomplete_markets", 0))
    return found


def _failed_checks(instance: dg.DagsterInstance, first: date, last: date) -> list[FailedCheck]:
    storage = instance.event_log_storage
    keys = [dg.AssetCheckKey(dg.AssetKey(table), check.name) for table, checks in CHECKS.items() for check in checks]
    failed = []
    for info in storage.get_asset_check_partition_info(keys):
        ref = _in_window(info.partition_key, first, last)
        if ref is None or info.latest_execution_status != AssetCheckExecutionRecordStatus.FAILED:
            continue
        history = storage.get_asset_check_execution_history(
            info.check_key, limit=1, status={AssetCheckExecutionRecordStatus.FAILED},
            partition_filter=PartitionKeyFilter(key=info.partition_key))
        evaluation = history[0].evaluation if history else None
        concerned = evaluation.metadata.get("concerned") if evaluation else None
        failed.append(FailedCheck(
            info.check_key.asset_key.to_user_string(), info.check_key.name, ref.platform, ref.day,
            evaluation.severity.value if evaluation else "unknown",
            (evaluation.description or "") if evaluation else "(its evaluation is not in the instance)",
            tuple(map(str, concerned.value)) if isinstance(concerned, dg.JsonMetadataValue)
            and isinstance(concerned.value, list) else ()))
    return sorted(failed, key=lambda c: (c.asset, c.check, c.day, c.platform))
