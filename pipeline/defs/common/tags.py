"""The run tags every domain's schedules and sensors set, the run queue's priorities, and a step's reading of them."""

from collections.abc import Mapping

import dagster as dg
from dagster._core.errors import DagsterInvalidPropertyError  # not exported: what `run` raises outside a run

from pipeline.engine.lake.replacement import ALLOW_SHRINK_TAG

TRIGGER_TAG = "pmw/trigger"  # who asked for the run: daily, backfill_sensor, orderbook_round, ...
PRIORITY_TAG = "dagster/priority"  # the run queue launches higher values first
DAILY_PRIORITY = "10"
BACKFILL_PRIORITY = "-10"
__all__ = ["ALLOW_SHRINK_TAG", "BACKFILL_PRIORITY", "DAILY_PRIORITY", "PRIORITY_TAG", "TRIGGER_TAG", "allows_shrink",
           "run_tags"]


def run_tags(context: dg.AssetExecutionContext) -> Mapping[str, str]:
    """The run's tags; none for an asset invoked directly, outside a run."""
    try:
        return context.run.tags
    except DagsterInvalidPropertyError:
        return {}


def allows_shrink(context: dg.AssetExecutionContext) -> bool:
    """Whether the run is tagged pmw/allow_shrink=true: its partitions may shrink past PMW_SHRINK_TOLERANCE (a
    deliberate correction, as `pmw backfill --allow-shrink`)."""
    return run_tags(context).get(ALLOW_SHRINK_TAG, "").strip().lower() in ("1", "true", "yes")
