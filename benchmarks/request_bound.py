"""The fewest requests the documented endpoints allow for a partition of a sandbox world.

Shared by the request-efficiency benchmark and tests/defs/test_request_efficiency.py: the bound is
computed from what the API itself says (page sizes, the listing's last trade times, 10 markets per
price-history call), never from what the pipeline happened to do.
"""

from __future__ import annotations

import math
from collections import Counter
from datetime import UTC, date, datetime, time

from pipeline.engine.schema import MAX_LIMIT, MAX_PRICE_HISTORY_MARKETS, Platform
from pipeline.engine.sources.liveness import live_records
from pmw_sandbox.world import World


def fewest_requests(world: World, platform: Platform, day: date, catalogue: bool = True) -> Counter[str]:
    """The least a client can do for one partition, knowing only what the API itself says, per endpoint.

    There is no date filter on the catalogue, so it must be listed whole (events could also be asked one
    by one, whichever is fewer); trades are newest first, so each market needs the pages back to the
    day's start (none when the listing says its last trade is older); price history takes 10 markets a call.
    ``catalogue=False`` leaves the catalogue out, for the later days of a run that listed it once.
    """
    records = [world.market_record(m) for m in world.markets(platform)]
    live = live_records(records, day)
    day_start = int(datetime.combine(day, time(), UTC).timestamp())
    need: Counter[str] = Counter()
    if catalogue:
        need["/markets"] = math.ceil(len(records) / MAX_LIMIT["markets"])
        events_needed = len({r["event_id"] for r in live})
        need["/events"] = min(math.ceil(len(world.events(platform)) / MAX_LIMIT["events"]), events_needed)
        need["/series"] = math.ceil(len(world.series(platform)) / MAX_LIMIT["series"])
    for record in live:
        activity = world.activity(world.find_market(record["id"], platform))
        times = activity.ts[activity.taker]  # trades are asked taker-only: a match is one row
        if len(times) == 0 or times[-1] < day_start:
            continue
        recent = int((times >= day_start).sum())
        older = len(times) - recent
        page = MAX_LIMIT["trades"]
        need["/trades"] += recent // page + 1 if older else max(1, math.ceil(recent / page))
    need["/price-history"] = math.ceil(len(live) / MAX_PRICE_HISTORY_MARKETS)
    return need
