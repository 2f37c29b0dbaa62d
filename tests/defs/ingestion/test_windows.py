"""The window a run of an ingestion asset lands from: its `pmw/window` tag, or the backfill it belongs to."""

from __future__ import annotations

import logging
from datetime import date, timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import dagster as dg
import pytest
from dagster._core.execution.backfill import BulkActionStatus, PartitionBackfill
from polars.testing import assert_frame_equal

from pipeline.definitions import defs
from pipeline.defs.ingestion.windows import WINDOW_DAYS, WINDOW_TAG, run_window
from pipeline.engine.spool.window import Window
from tests.support.runs import DAY, lake_tables, land_directly, materialise

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


@pytest.mark.slow
def test_the_runs_of_a_window_land_every_table_as_runs_of_its_days_alone_do(
    pipeline_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three days of Polymarket through Dagster: one window's runs (one sweep), then each day alone in another data
    dir (its assets' steps invoked directly, as a run without the window's tag runs them); every table of every day
    is the same, row for row (the fetch time aside)."""
    days = [DAY - timedelta(days=n) for n in (2, 1, 0)]
    window = Window(days[0], days[-1], "equality")
    for day in days:
        result = materialise("polymarket", day, tags={WINDOW_TAG: window.tag})
        assert result.success
        trades = next(e for e in result.get_asset_materialization_events() if e.asset_key == dg.AssetKey("trades"))
        assert trades.materialization.metadata[WINDOW_DAYS].value == len(days)  # landed from the window's sweep
    swept = {day: lake_tables(pipeline_env, "polymarket", day) for day in days}
    monkeypatch.setenv("PMW_DATA_DIR", str(tmp_path / "alone"))
    for day in days:
        alone_run = land_directly("polymarket", day)
        assert alone_run.success, alone_run.failures()
    for day in days:
        alone = lake_tables(tmp_path / "alone", "polymarket", day)
        assert swept[day].keys() == alone.keys()
        for table, frame in swept[day].items():
            assert frame.height > 0 or table == "trades", (table, day)
            assert_frame_equal(frame, alone[table], check_row_order=False), (table, day)
