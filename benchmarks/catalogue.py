"""The real catalogue: a day's backfill, and a 30-day one, against a catalogue of 200,000 markets per platform.

The real catalogues list hundreds of thousands of markets over their history and `/markets` has no date filter,
so the listing is paged whole (250 a page) to find the few hundred live on a day. One sandbox world (seed 7, a
30-day window, its own markets plus ARCHIVED markets per platform resolved before the window: pmw_sandbox/archive.py)
is served over HTTP on loopback, and counts the requests of each run by the API key it sends, as a counting proxy
would. Each run is a process of its own, measured from outside (wall, CPU and peak resident set of that process
alone, os.wait4), so the sandbox serving it counts in none of its figures:

- the day: `pmw backfill` of both platforms for the world's last day; its requests against the bound
  (benchmarks/request_bound.py: the catalogue listed once, ceil(N/250) pages of `/markets`, then the day's
  per-market requests), the `/markets` pages against ceil(N/250) per platform, its peak RSS;
- the listing: the same listing code in a process of its own (`UnifiedPartitions.markets(day)`: series, events
  and markets paged whole, the day's markets selected and normalised), its CPU time (time.process_time across the
  call, every thread of the process, the sandbox's serving not included), and the day's live markets found against
  the world's (nothing lost);
- 30 days: `pmw backfill` of both platforms over the window (one window per platform), its requests against the
  window's bound.
"""

from __future__ import annotations

import math
import os
import resource
import shutil
import sys
import time
from collections import Counter
from dataclasses import replace
from datetime import date
from pathlib import Path
from typing import Any

from benchmarks.child import Measured, run_in_child, run_measured
from benchmarks.peers import CountingApp
from benchmarks.report import Report, Target

SEED = 7
END = date(2026, 11, 21)  # the world's last day: the day backfilled
WINDOW_DAYS = 30
ARCHIVED = 200_000  # archived markets per platform, beside the world's own few hundred
TRADES_PER_MARKET_DAY = 40.0  # fewer trades than the default world: the catalogue is what is measured here
PLATFORMS = ("polymarket", "kalshi")
PAGE = 250  # /markets' largest page
TARGET_RSS_MB = 1024
TARGET_LISTING_CPU_S = 10.0
TARGET_RATIO = 1.1
RUN_DEADLINE_S = 3600
KEYS = {"day": "catalogue-day", "listing": "catalogue-listing", "window": "catalogue-window"}


def run(quick: bool, workdir: Path) -> Report:
    from pipeline.engine.schema import MAX_LIMIT, Platform
    from pmw_sandbox.app import SandboxConfig
    from pmw_sandbox.catalogue import WorldConfig
    from pmw_sandbox.server import SandboxServer

    assert MAX_LIMIT["markets"] == PAGE
    config = WorldConfig(seed=SEED, end=END, days=WINDOW_DAYS, trades_per_market_day=TRADES_PER_MARKET_DAY,
                         archived_markets=ARCHIVED)
    if quick:  # a 2-day world of a few markets and 2,000 archived: proves the benchmark runs
        config = replace(config, days=2, series_per_platform=2, events_per_series=2, markets_per_event=2,
                         multivariate_markets=0, archived_markets=2_000)
    app = CountingApp(SandboxConfig(world=config, api_keys=tuple(KEYS.values())))
    listed = {p: len(app.world.markets(Platform(p))) + config.archived_markets for p in PLATFORMS}
    scratch = workdir / "catalogue"
    shutil.rmtree(scratch, ignore_errors=True)
    first = config.start_day
    with SandboxServer(app, port=0) as server:
        day = _backfill(server.url, KEYS["day"], END, END, scratch / "day")
        listing = run_in_child("benchmarks.catalogue:listing", {"url": server.url, "key": KEYS["listing"],
                                                                "day": END.isoformat()})
        window = _backfill(server.url, KEYS["window"], first, END, scratch / "window")
    shutil.rmtree(scratch, ignore_errors=True)
    day_bound, window_bound = _bound(app, END, END), _bound(app, first, END)
    live = _live_ids(app, END)
    return _report(app, listed, day, listing, window, day_bound, window_bound, live, first)


def _backfill(url: str, key: str, first: date, last: date, scratch: Path) -> Measured:
    """`pmw backfill` of both platforms from `first` to `last`, in a process of its own (no request budget; the SQL
    models are not rebuilt after it: the ingestion is measured)."""
    env = {
        **{name: "" for name in os.environ if name.startswith("PMW_")},  # none of this shell's settings
        "PMW_SOURCE": "api", "PMW_API_URL": url, "PMW_API_KEY": key, "PMW_PLATFORMS": ",".join(PLATFORMS),
        "PMW_DATA_DIR": str(scratch / "data"), "PMW_RATE_LIMIT_DB": str(scratch / "rate-limit.sqlite"),
        "PMW_RATE_LIMIT_PER_MIN": "1000000",  # unthrottled: the budget never waits
        "DAGSTER_HOME": "",  # the data dir's own, made by pmw
    }
    command = [sys.executable, "-m", "pipeline.cli.main", "backfill", "--platform", ",".join(PLATFORMS),
               "--start", first.isoformat(), "--end", last.isoformat(), "--no-models"]
    return run_measured(command, env=env, deadline_s=RUN_DEADLINE_S, scratch=scratch / "process")


def listing(url: str, key: str, day: str) -> dict[str, Any]:
    """In the child: each platform's catalogue listed and the day's markets selected and normalised, as the
    `markets` asset does (`UnifiedPartitions.markets`); the CPU time of the process across it."""
    from pipeline.engine.config import Secret
    from pipeline.engine.normalize.partitions.unified import UnifiedPartitions
    from pipeline.engine.sources.http import HttpLayer
    from pipeline.engine.sources.unified import UnifiedSource

    figures: dict[str, Any] = {}
    with HttpLayer(url, api_key=Secret(key)) as http:
        source = UnifiedSource(http, cache=None, cache_key="benchmark")
        for platform in PLATFORMS:
            cpu, wall = time.process_time(), time.perf_counter()
            markets = UnifiedPartitions(source, platform, "api").markets(date.fromisoformat(day))
            figures[platform] = {"cpu_s": round(time.process_time() - cpu, 2),
                                 "wall_s": round(time.perf_counter() - wall, 2),
                                 "ids": markets.rows["id"].to_list(), "rejects": markets.rejects.height}
    figures["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    return figures


def _bound(app: CountingApp, first: date, last: date) -> Counter[str]:
    from benchmarks.request_bound import fewest_requests
    from pipeline.engine.schema import Platform

    return sum((fewest_requests(app.world, Platform(p), first, last=last) for p in PLATFORMS), Counter())


def _live_ids(app: CountingApp, day: date) -> dict[str, set[str]]:
    """The world's markets live on the day, per platform, by the rule the pipeline keeps a market by."""
    from pipeline.engine.schema import Platform
    from pipeline.engine.sources.liveness import live_records

    return {p: {r["id"] for r in live_records([app.world.market_record(m) for m in app.world.markets(Platform(p))],
                                              day)} for p in PLATFORMS}


def _data_requests(counts: Counter[str]) -> Counter[str]:
    """The requests for data: all but the service's status (`/health`, `/platforms`, two a partition)."""
    return Counter({path: n for path, n in counts.items() if path not in ("/health", "/platforms")})


def _report(app: CountingApp, listed: dict[str, int], day: Measured, listing: dict[str, Any], window: Measured,
            day_bound: Counter[str], window_bound: Counter[str], live: dict[str, set[str]], first: date) -> Report:
    day_made, window_made = _data_requests(app.counts[KEYS["day"]]), _data_requests(app.counts[KEYS["window"]])
    listing_pages = sum(math.ceil(n / PAGE) for n in listed.values())
    day_total, day_fewest = sum(day_made.values()), sum(day_bound.values())
    window_total, window_fewest = sum(window_made.values()), sum(window_bound.values())
    listing_cpu = round(sum(listing[p]["cpu_s"] for p in PLATFORMS), 2)
    lost = {p: sorted(live[p] - set(listing[p]["ids"])) for p in PLATFORMS}
    found = sum(len(live[p] & set(listing[p]["ids"])) for p in PLATFORMS)
    live_total = sum(len(ids) for ids in live.values())
    status = {name: sum(n for path, n in app.counts[KEYS[name]].items() if path in ("/health", "/platforms"))
              for name in ("day", "window")}
    rows: list[list[Any]] = [
        ["1 day", day_made["/markets"], listing_pages, day_total, day_fewest, round(day_total / day_fewest, 3),
         status["day"], day.seconds, day.cpu_seconds, day.peak_rss_mb],
        [f"{(END - first).days + 1} days", window_made["/markets"], listing_pages, window_total,
         window_fewest, round(window_total / window_fewest, 3), status["window"], window.seconds,
         window.cpu_seconds, window.peak_rss_mb],
    ]
    targets = [
        Target("the day lists the catalogue once: ceil(N/250) /markets requests per platform",
               day_made["/markets"] == listing_pages,
               f"{day_made['/markets']} /markets requests, {listing_pages} pages of "
               + " and ".join(f"{n:,} {p} markets" for p, n in listed.items())),
        Target(f"the day's requests within {TARGET_RATIO}x the bound (the listing plus the day's per-market requests)",
               day_total <= TARGET_RATIO * day_fewest,
               f"{day_total / day_fewest:.3f}x: {day_total} against {day_fewest}"),
        Target(f"the day's backfill peak RSS under {TARGET_RSS_MB} MB", day.peak_rss_mb < TARGET_RSS_MB,
               f"{day.peak_rss_mb} MB, {day.peak_rss_mb / TARGET_RSS_MB:.2f}x the limit"),
        Target(f"the listing's CPU time under {TARGET_LISTING_CPU_S:.0f} s", listing_cpu < TARGET_LISTING_CPU_S,
               f"{listing_cpu} s for both platforms ("
               + ", ".join(f"{p} {listing[p]['cpu_s']} s CPU, {listing[p]['wall_s']} s wall" for p in PLATFORMS)
               + f"), listing process peak RSS {listing['peak_rss_mb']} MB"),
        Target("every market live on the day found by the listing", not any(lost.values()),
               f"{found} of {live_total} found" + "".join(f"; {p} lost {ids[:5]}" for p, ids in lost.items() if ids)),
        Target(f"the {(END - first).days + 1}-day window's requests within {TARGET_RATIO}x the bound",
               window_total <= TARGET_RATIO * window_fewest,
               f"{window_total / window_fewest:.3f}x: {window_total} against {window_fewest}"),
    ]
    return Report(
        name="catalogue",
        title=f"The real catalogue: backfills of {', '.join(PLATFORMS)} ending {END} against "
              + " and ".join(f"{n:,} {p} markets" for p, n in listed.items())
              + f" (sandbox seed {SEED}, {app.world.config.archived_markets:,} archived per platform)",
        columns=["backfill", "/markets", "ceil(N/250)", "requests", "bound", "ratio", "status requests", "wall s",
                 "CPU s", "peak RSS MB"],
        rows=rows,
        figures={"listed": listed, "day": {"requests": dict(day_made), "bound": dict(day_bound),
                                           "seconds": day.seconds, "cpu_seconds": day.cpu_seconds,
                                           "peak_rss_mb": day.peak_rss_mb},
                 "listing": {p: {k: v for k, v in listing[p].items() if k != "ids"} | {"found": len(listing[p]["ids"])}
                             for p in PLATFORMS} | {"cpu_s": listing_cpu, "peak_rss_mb": listing["peak_rss_mb"],
                                                     "live": live_total, "lost": sum(map(len, lost.values()))},
                 "window": {"first": first.isoformat(), "requests": dict(window_made), "bound": dict(window_bound),
                            "seconds": window.seconds, "cpu_seconds": window.cpu_seconds,
                            "peak_rss_mb": window.peak_rss_mb}},
        targets=targets,
        notes=[
            "requests: data requests counted by the sandbox per API key (a counting proxy); the status requests "
            "(/health, /platforms, two a partition) are shown beside them, not in the ratio",
            "listing CPU: time.process_time() across UnifiedPartitions.markets(day) per platform (series, events and "
            "markets paged whole, the day's markets selected and normalised) in a process of its own, every thread "
            "of it; the sandbox serves from another process",
            f"wall, CPU and peak RSS: the pmw backfill process alone (os.wait4), imports included; "
            f"{TRADES_PER_MARKET_DAY:.0f} trades per market-day (the default world's 150 would only lengthen the run)",
        ],
    )
