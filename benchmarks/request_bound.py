"""The fewest requests the documented endpoints allow for a partition of a sandbox world.

Shared by the request-efficiency benchmark and tests/defs/ingestion/test_request_efficiency.py: the bound is
computed from what the API itself says (page sizes, the listing's last trade times, 10 markets per
price-history call), never from what the pipeline happened to do.
"""

from __future__ import annotations

import math
from collections import Counter
from datetime import UTC, date, datetime, time, timedelta

from pipeline.engine.schema import MAX_LIMIT, MAX_PRICE_HISTORY_MARKETS, Platform
from pipeline.engine.sources.liveness import live_records
from pipeline.engine.sources.unified import HOURLY
from pmw_sandbox.activity import period_ohlc
from pmw_sandbox.world import World


def fewest_requests(world: World, platform: Platform, day: date, catalogue: bool = True,
                    last: date | None = None) -> Counter[str]:
    """The least a client can do for one partition, or for the window of days from `day` to `last`, knowing
    only what the API itself says, per endpoint.

    There is no date filter on the catalogue, so it must be listed whole (events could also be asked one
    by one, whichever is fewer); trades are newest first, so each market live on a day of the window needs
    the pages back to the window's start, once (none when the listing says its last trade is older); price
    history takes 10 markets a call, and at least one call per 5,000 points the markets have in the window.
    ``catalogue=False`` leaves the catalogue out, for the later days of a run that listed it once.
    """
    last = last or day
    days = [day + timedelta(days=n) for n in range((last - day).days + 1)]
    records = [world.market_record(m) for m in world.markets(platform)]
    live = list({r["id"]: r for d in days for r in live_records(records, d)}.values())
    window_start = int(datetime.combine(day, time(), UTC).timestamp())
    window_end = int(datetime.combine(last + timedelta(days=1), time(), UTC).timestamp())
    need: Counter[str] = Counter()
    if catalogue:  # the archive's markets (pmw_sandbox/archive.py) are listed too, but live on no day of the world
        archive = world.archive
        need["/markets"] = math.ceil((len(records) + archive.markets) / MAX_LIMIT["markets"])
        events_needed = len({r["event_id"] for r in live})
        need["/events"] = min(math.ceil((len(world.events(platform)) + archive.events) / MAX_LIMIT["events"]),
                              events_needed)
        need["/series"] = math.ceil((len(world.series(platform)) + bool(archive.markets)) / MAX_LIMIT["series"])
    points = 0
    for record in live:
        market = world.find_market(record["id"], platform)
        activity = world.activity(market)
        points += sum(len(period_ohlc(activity, j, window_start, window_end - 1, HOURLY)[0])
                      for j in range(len(market.outcomes)))
        times = activity.ts[activity.taker]  # trades are asked taker-only: a match is one row
        if len(times) == 0 or times[-1] < window_start:
            continue
        recent = int((times >= window_start).sum())
        older = len(times) - recent
        page = MAX_LIMIT["trades"]
        need["/trades"] += recent // page + 1 if older else max(1, math.ceil(recent / page))
    need["/price-history"] = max(math.ceil(len(live) / MAX_PRICE_HISTORY_MARKETS),
                                 math.ceil(points / MAX_LIMIT["price_history"]))
    return need
