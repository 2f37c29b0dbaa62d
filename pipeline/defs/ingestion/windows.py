"""Which window of days a run of an ingestion asset belongs to, so that its trades and price history come from
the window's one sweep (pipeline.engine.spool.window).

Every (table, platform, day) partition stays a run of its own, checked on its own; the runs of a window share a
sweep through a spool on disk. A run names its window in its `pmw/window` tag (set by `pmw backfill`, the daily
schedule and the backfill sensor); a run of a backfill launched from the UI (tag `dagster/backfill`) finds its
window among the partitions that backfill targets: the consecutive days of its platform around its own.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date

import dagster as dg

from pipeline.defs.common.tags import run_tags
from pipeline.engine.spool.window import Window, windows_of

WINDOW_TAG = "pmw/window"  # the value: Window.tag, `first..last@token`
WINDOW_DAYS = "window_days"  # metadata of a partition landed from a window: the window's length
BACKFILL_TAG = "dagster/backfill"


def run_window(context: dg.AssetExecutionContext, platform: str, day: date) -> Window | None:
    """The window of days the run lands together, if it covers the run's day: its tag's, else its UI
    backfill's; None for a day read alone."""
    tags = run_tags(context)
    tag = tags.get(WINDOW_TAG)
    if tag:
        try:
            window = Window.parse(tag)
        except ValueError as error:
            context.log.warning("%s; the day is read alone", error)
            return None
        return window if window.covers(day) else None
    backfill_id = tags.get(BACKFILL_TAG)
    if not backfill_id:
        return None
    days = _backfill_days(context.instance, backfill_id, context.asset_key, platform)
    return next((w for w in windows_of(days, backfill_id) if w.covers(day)), None)


def _backfill_days(instance: dg.DagsterInstance, backfill_id: str, asset_key: dg.AssetKey,
                   platform: str) -> list[date]:
    """The days of `platform` that the backfill targets for the asset (a job's backfill: for every asset)."""
    backfill = instance.get_backfill(backfill_id)
    if backfill is None:
        return []
    keys: Iterable[str] = backfill.partition_names or []
    if backfill.asset_backfill_data is not None:
        targets = backfill.asset_backfill_data.target_subset.iterate_asset_partitions()
        keys = [str(t.partition_key) for t in targets if t.asset_key == asset_key and t.partition_key is not None]
    days = []
    for key in keys:
        day, _, key_platform = key.partition("|")  # Dagster's string form: date, then platform
        if key_platform == platform:
            days.append(date.fromisoformat(day))
    return days
