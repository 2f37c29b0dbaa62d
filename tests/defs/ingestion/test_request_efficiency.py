"""Requests made for a partition, against the fewest the documented endpoints allow."""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path

import pytest

from benchmarks.request_bound import fewest_requests
from pipeline.cli.backfill.partitions import run_backfill
from pipeline.defs.common.resources import PipelineResource
from pipeline.engine.schema import MAX_LIMIT, TABLES, Platform
from pmw_sandbox.world import World
from tests.support.runs import DAY, shared_instance
from tests.support.world import PIPELINE_WORLD


@pytest.mark.slow
def test_a_one_day_backfill_stays_within_ten_percent_of_the_fewest_requests(pipeline_env: Path) -> None:
    reports = run_backfill(["polymarket", "kalshi"], DAY, DAY, resource=PipelineResource(), say=lambda _: None,
                           instance=shared_instance())
    assert all(r.success for r in reports)
    world = World(PIPELINE_WORLD)
    for report in reports:
        bound = fewest_requests(world, Platform(report.platform), DAY)
        made = report.requests
        assert sum(made.values()) <= 1.1 * sum(bound.values()), (made, bound)
        for endpoint, fewest in bound.items():
            assert made[endpoint] >= fewest, f"{endpoint}: {made[endpoint]} requests, fewer than possible {fewest}"


@pytest.mark.slow
def test_a_several_day_backfill_lists_the_catalogue_once_and_sweeps_its_window_once(pipeline_env: Path) -> None:
    first = DAY.replace(day=DAY.day - 2)
    reports = run_backfill(["kalshi"], first, DAY, resource=PipelineResource(), say=lambda _: None,
                           instance=shared_instance())
    assert len(reports) == 3 and all(r.ok for r in reports)
    assert all(set(r.rows) == set(TABLES) for r in reports)  # every table of every day landed, checks passed
    world = World(PIPELINE_WORLD)
    listed = sum((r.requests for r in reports), Counter())
    assert listed["/markets"] == math.ceil(len(world.markets(Platform.KALSHI)) / MAX_LIMIT["markets"])
    assert listed["/series"] == 1 and listed["/events"] == 1
    window = fewest_requests(world, Platform.KALSHI, first, last=DAY)  # one sweep of the three days
    assert sum(listed.values()) <= 1.1 * sum(window.values()), (listed, window)
    assert not list((pipeline_env / "windows").glob("*/*/manifest.json"))  # the window's spools are gone
