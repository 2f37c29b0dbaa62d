"""What Dagster recorded as landed, held against the lake: a record is trusted only while its file is there and
reads (a file can be deleted, emptied or damaged after its run). The backfill sensor and the SQL models ask."""

from __future__ import annotations

import dagster as dg

from pipeline.defs.automation.budget import PartitionRef
from pipeline.engine.lake.store import Lake
from pipeline.engine.schema import TABLES


def recorded_partitions(instance: dg.DagsterInstance) -> dict[str, set[PartitionRef]]:
    """Per ingestion table, the partitions the instance holds a materialisation of."""
    return {table: {PartitionRef.parse(key) for key in instance.get_materialized_partitions(dg.AssetKey(table))}
            for table in TABLES}


def lost_partitions(lake: Lake, recorded: dict[str, set[PartitionRef]]) -> dict[str, set[PartitionRef]]:
    """Per table, the `recorded` partitions whose file is not in `lake` or does not read (`Lake.is_readable`)."""
    return {table: {ref for ref in refs if not lake.is_readable(table, ref.platform, ref.day)}
            for table, refs in recorded.items()}
