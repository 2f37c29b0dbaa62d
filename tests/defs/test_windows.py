"""The window a run of an ingestion asset lands from: its `pmw/window` tag, or the backfill it belongs to."""

from __future__ import annotations

import logging
from datetime import date
from types import SimpleNamespace
from typing import Any

import dagster as dg
import pytest
from dagster._core.execution.backfill import BulkActionStatus, PartitionBackfill

from pipeline.definitions import defs
from pipeline.defs.ingestion.windows import run_window
from pipeline.engine.sources.window import Window

TRADES = dg.AssetKey("trades")
KEYS = ["2026-11-15|kalshi", "2026-11-19|kalshi", "2026-11-20|kalshi", "2026-11-21|kalshi", "2026-11-20|polymarket"]


def _context(instance: dg.DagsterInstance, tags: dict[str, str]) -> Any:
    """What `run_window` reads of an asset's execution context."""
    return SimpleNamespace(run=SimpleNamespace(tags=tags), instance=instance, asset_key=TRADES,
                           log=logging.getLogger("test"))


@pytest.fixture(scope="module")
def instance() -> dg.DagsterInstance:
    instance = dg.DagsterInstance.ephemeral()
    instance.add_backfill(PartitionBackfill("job-backfill", BulkActionStatus.REQUESTED, False, {}, 0.0,
                                            partition_names=KEYS))
    instance.add_backfill(PartitionBackfill.from_asset_partitions(
        "asset-backfill", defs.resolve_asset_graph(), KEYS, [TRADES], 0.0, {}, instance, False, None, None, None))
    return instance


@pytest.mark.parametrize("backfill", ["job-backfill", "asset-backfill"])
def test_a_run_of_a_ui_backfill_lands_from_its_platforms_consecutive_days(instance: dg.DagsterInstance,
                                                                         backfill: str) -> None:
    context = _context(instance, {"dagster/backfill": backfill})
    assert run_window(context, "kalshi", date(2026, 11, 20)) == Window(date(2026, 11, 19), date(2026, 11, 21), backfill)
    assert run_window(context, "kalshi", date(2026, 11, 15)) == Window(date(2026, 11, 15), date(2026, 11, 15), backfill)
    assert run_window(context, "polymarket", date(2026, 11, 20)).days == [date(2026, 11, 20)]  # type: ignore[union-attr]


def test_a_run_tag_names_the_window_and_a_day_outside_it_or_a_bad_tag_is_read_alone(
        instance: dg.DagsterInstance) -> None:
    tag = "2026-11-19..2026-11-21@daily-2026-11-22"
    assert run_window(_context(instance, {"pmw/window": tag}), "kalshi", date(2026, 11, 20)) == Window.parse(tag)
    assert run_window(_context(instance, {"pmw/window": tag}), "kalshi", date(2026, 11, 18)) is None
    assert run_window(_context(instance, {"pmw/window": "last week"}), "kalshi", date(2026, 11, 20)) is None
    assert run_window(_context(instance, {}), "kalshi", date(2026, 11, 20)) is None
