"""Requests made for a partition, against the fewest the documented endpoints allow."""

from __future__ import annotations

import math
from collections import Counter
from datetime import UTC, date, datetime, time
from pathlib import Path

from pipeline.backfill import run_backfill
from pipeline.resources import PipelineResource
from pipeline.sandbox.world import World
from pipeline.schema import MAX_LIMIT, MAX_PRICE_HISTORY_MARKETS, Platform
from pipeline.sources.unified import is_live_on
from tests.conftest import WORLD
from tests.pipeline.conftest import DAY


def fewest_requests(world: World, platform: Platform, day: date, catalogue: bool = True) -> Counter[str]:
    """The least a client can do for one partition, knowing only what the API itself says.

    There is no date filter on the catalogue, so it must be listed whole (events could also be asked one
    by one, whichever is fewer); trades are newest first, so each market needs the pages back to the
    day's start (none when the listing says its last trade is older); price history takes 10 markets a call.
    """
    records = [world.market_record(m) for m in world.markets(platform)]
    live = [r for r in records if is_live_on(r, day)]
    day_start = int(datetime.combine(day, time(), UTC).timestamp())
    need: Counter[str] = Counter()
    if catalogue:
        need["/markets"] = math.ceil(len(records) / MAX_LIMIT["markets"])
        events_needed = len({r["event_id"] for r in live})
        need["/events"] = min(math.ceil(len(world.events(platform)) / MAX_LIMIT["events"]), events_needed)
        need["/series"] = math.ceil(len(world.series(platform)) / MAX_LIMIT["series"])
    for record in live:
        activity = world.activity(world.find_market(record["id"], platform))
        if len(activity.ts) == 0 or activity.ts[-1] < day_start:
            continue
        recent = int((activity.ts >= day_start).sum())
        older = len(activity.ts) - recent
        page = MAX_LIMIT["trades"]
        need["/trades"] += recent // page + 1 if older else max(1, math.ceil(recent / page))
    need["/price-history"] = math.ceil(len(live) / MAX_PRICE_HISTORY_MARKETS)
    return need


def test_a_one_day_backfill_stays_within_ten_percent_of_the_fewest_requests(pipeline_env: Path) -> None:
    reports = run_backfill(["polymarket", "kalshi"], DAY, DAY, resource=PipelineResource(), say=lambda _: None)
    assert all(r.success for r in reports)
    world = World(WORLD)
    for report in reports:
        bound = fewest_requests(world, Platform(report.platform), DAY)
        made = report.requests
        assert sum(made.values()) <= 1.1 * sum(bound.values()), (made, bound)
        for endpoint, fewest in bound.items():
            assert made[endpoint] >= fewest, f"{endpoint}: {made[endpoint]} requests, fewer than possible {fewest}"


def test_a_several_day_backfill_lists_the_catalogue_once(pipeline_env: Path) -> None:
    first = DAY.replace(day=DAY.day - 2)
    reports = run_backfill(["kalshi"], first, DAY, resource=PipelineResource(), say=lambda _: None)
    assert len(reports) == 3 and all(r.success for r in reports)
    world = World(WORLD)
    listed = sum((r.requests for r in reports), Counter())
    assert listed["/markets"] == math.ceil(len(world.markets(Platform.KALSHI)) / MAX_LIMIT["markets"])
    assert listed["/series"] == 1 and listed["/events"] == 1
    trades_bound = sum(fewest_requests(world, Platform.KALSHI, r.day, catalogue=False)["/trades"] for r in reports)
    assert listed["/trades"] <= 1.1 * trades_bound
