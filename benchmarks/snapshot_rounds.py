"""Snapshot rounds beside the daily ingestion under the strict budget: 429s met, and how long the daily run waits.

Against the sandbox served on loopback in strict mode (100 requests per rate window), with time scaled down: the
sandbox's window and the pipeline's (PMW_RATE_WINDOW_S) are `window_s` instead of a minute, and an "hour" of
rounds is 60 windows. Runs go through Dagster's run queue as the daemon drives it (benchmarks/run_queue.py: the
QueuedRunCoordinator, the repo's dagster.yaml pools, the `dagster/priority` tags), created from the schedules' own
run requests (`daily_ingestion`, `orderbook_rounds`), one run per (platform, day) or per platform's round.

In a fresh process with a private data directory:
1. a warm-up landing of the day (Polymarket and Kalshi) lands the markets that the rounds' busiest-20 lists read;
2. the day landed again, alone: each daily run's time from queued to started and to ended;
3. hourly rounds of 20 markets per platform, the day landed once more in the first hours: once queued at the
   round's tick just after the round's runs (the daily schedule and the rounds' schedule ticking together), once
   queued while a round's run is running (the worst case: the run already holds the `unified_api` pool).

Each daily run of phase 3 is compared with its twin of phase 2: its delay is the extra time from queued to ended.
The README's bound: the queue launches a queued daily run before a round, and the pool admits one run at a time,
so a daily run waits at most for the round already running when it is queued, whose N + W requests take
(N + W) / 100 of a window of budget. Converted to the scaled window, that bound is the round run's wall time
when the daily run is queued plus (N + W) / 100 of the pipeline's budget window (the window plus the budget's
margin, pipeline/engine/sources/request_budget.py).
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import asdict, dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from benchmarks.child import run_in_child
from benchmarks.report import Report, Target
from pipeline.engine.schema import Platform

SEED = 5
DAY = date(2026, 11, 21)  # the day the daily runs land; the rounds tick on the day after
SECRET = "sk-bench-snapshots-4d2a"
ROUND_MARKETS = 20
PLATFORMS = ("polymarket", "kalshi")
BUDGET_MARGIN_S = 2.0  # the unified API budget's window is the rate window plus this (request_budget.py)
DEQUEUE_SHARE = 5 / 60  # Dagster's default dequeue interval (5 s) as a share of the real minute
WHILE_RUNNING = "queued while a round runs"
AT_TICK = "queued at the round's tick"


@dataclass(frozen=True)
class Scale:
    window_s: float  # the sandbox's and the pipeline's rate window (a minute for the real API)
    hours: int  # hours of rounds; the daily runs are queued in the first two
    platforms: tuple[str, ...]  # ingested daily and snapshotted every hour
    events_per_series: int  # the world's size: 3 series x this many events x markets_per_event per platform
    markets_per_event: int
    warm_up: bool  # land the day once before measuring it alone, so that every measured landing is a re-run
    settle: bool  # wait a budget window between the phases, so that each starts with the whole budget

    @property
    def hour_s(self) -> float:
        return 60 * self.window_s


FULL = Scale(window_s=1.0, hours=3, platforms=PLATFORMS, events_per_series=3, markets_per_event=15, warm_up=True,
             settle=True)
# Quick: one platform's day in a world of 9 markets, alone and then queued while the one round runs; its Dagster
# instance and data in memory (/dev/shm) where there is one: it proves the benchmark runs, its figures mean nothing.
QUICK = Scale(window_s=0.25, hours=1, platforms=("kalshi",), events_per_series=1, markets_per_event=3,
              warm_up=False, settle=False)
MEMORY_DIR = Path("/dev/shm")


def run(quick: bool, workdir: Path) -> Report:
    scale = QUICK if quick else FULL
    scratch = MEMORY_DIR if quick and MEMORY_DIR.is_dir() else workdir
    data_dir = scratch / f"snapshots-{os.getpid()}"
    shutil.rmtree(data_dir, ignore_errors=True)
    data_dir.mkdir(parents=True)
    try:
        figures = run_in_child("benchmarks.snapshot_rounds:scenario",
                               {"scale": asdict(scale), "data_dir": str(data_dir)},
                               env={"DAGSTER_HOME": "", "TMPDIR": str(data_dir)})  # the instance beside the data
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)
    return _report(scale, figures)


def _report(scale: Scale, figures: dict[str, Any]) -> Report:
    daily = figures["daily"]
    worst = max(daily, key=lambda d: d["delay_s"] / d["bound_s"])
    return Report(
        name="snapshots",
        title=f"Snapshot rounds beside the daily ingestion: strict sandbox (100 requests per {scale.window_s:g} s "
              f"window, an hour = {scale.hour_s:g} s), hourly rounds of up to {ROUND_MARKETS} markets on "
              f"{', '.join(scale.platforms)} for {scale.hours} hour(s), seed {SEED}",
        columns=["daily run", "platform", "wait alone s", "wait s", "run alone s", "run s", "delay s", "bound s",
                 "delay/bound"],
        rows=[[d["scenario"], d["platform"], d["wait_alone_s"], d["wait_s"], d["duration_alone_s"], d["duration_s"],
               d["delay_s"], d["bound_s"], round(d["delay_s"] / d["bound_s"], 2)] for d in daily],
        figures={"scale": asdict(scale), **figures},
        targets=[
            Target("no 429 under the strict budget", figures["rate_limited"] == 0,
                   f"{figures['rate_limited']} answered 429 of {figures['requests_served']} requests served, "
                   f"{figures['round_requests']} of them by {figures['rounds']} round runs"),
            Target("no daily run delayed by the rounds past the bound",
                   all(d["delay_s"] <= d["bound_s"] for d in daily),
                   f"worst {worst['delay_s']:.2f} s of {worst['bound_s']:.2f} s "
                   f"({worst['delay_s'] / worst['bound_s']:.2f}x): {worst['platform']}, {worst['scenario']}"),
        ],
        notes=[f"rounds: {figures['rounds']} runs of {', '.join(str(n) for n in figures['round_markets'])} markets; "
               f"the round running when a daily run was queued took {figures['round_run_s']} s from start to end; "
               f"the budget's window is {figures['budget_window_s']:g} s (the rate window plus its margin)",
               "delay: the daily run's time from queued to ended beside the rounds minus the same run's alone; bound: "
               "the wall time of the round run holding the pool when it was queued plus (N + W) / 100 of the "
               "budget's window, N + W = 40"],
    )


def scenario(scale: dict[str, Any], data_dir: str) -> dict[str, Any]:
    """In the child: serve the strict sandbox, run the phases through the run queue, measure the runs."""
    from pmw_sandbox import SandboxApp, SandboxConfig, WorldConfig
    from pmw_sandbox.server import SandboxServer
    from pmw_sandbox.world import shared_world

    chosen = Scale(**{**scale, "platforms": tuple(scale["platforms"])})
    world = WorldConfig(seed=SEED, end=DAY, days=2, series_per_platform=3, events_per_series=chosen.events_per_series,
                        markets_per_event=chosen.markets_per_event, trades_per_market_day=100, multivariate_markets=2)
    app = SandboxApp(SandboxConfig.strict(world=world, api_keys=(SECRET,), rate_window_s=chosen.window_s))
    watchlist = Path(data_dir) / "orderbook_watchlist.csv"
    watchlist.parent.mkdir(parents=True, exist_ok=True)
    watchlist.write_text("".join(f"{m.platform.value},{m.id}\n" for p in chosen.platforms
                                 for m in shared_world(world).markets(Platform(p))[:ROUND_MARKETS]))
    with SandboxServer(app, port=0) as server:
        os.environ.update(_settings(server.url, Path(data_dir), watchlist, chosen))
        measured = _phases(chosen)
    return {**measured, "requests_served": app.requests_served, "rate_limited": app.rate_limited_answers}


def _settings(url: str, data_dir: Path, watchlist: Path, scale: Scale) -> dict[str, str]:
    return {
        "PMW_SOURCE": "api", "PMW_API_URL": url, "PMW_API_KEY": SECRET, "PMW_DATA_DIR": str(data_dir),
        "PMW_RATE_LIMIT_DB": str(data_dir / "budget.sqlite"), "PMW_RATE_LIMIT_PER_MIN": "100",
        "PMW_RATE_WINDOW_S": str(scale.window_s), "PMW_PLATFORMS": ",".join(scale.platforms),
        "PMW_LOOKBACK_DAYS": "0", "PMW_START_DATE": (DAY - timedelta(days=1)).isoformat(),
        "PMW_CATALOGUE_TTL_S": "0",  # every landing lists the catalogue, as the day's first does
        # Each round: the watch list's 20 markets of each platform (N = 0, W = 20 a platform), whatever is open.
        "PMW_ORDERBOOK_TOP_N": "0", "PMW_ORDERBOOK_WATCHLIST": str(watchlist), "PMW_ORDERBOOK_EVERY_MIN": "60",
    }


def _phases(scale: Scale) -> dict[str, Any]:
    import dagster as dg

    from benchmarks.run_queue import run_queue
    from pipeline.defs.automation.jobs import INGESTION_JOB
    from pipeline.defs.automation.schedule import daily_ingestion
    from pipeline.defs.ingestion.windows import WINDOW_TAG
    from pipeline.defs.orderbooks.schedule import ORDERBOOK_JOB, orderbook_rounds

    budget_window_s = scale.window_s + BUDGET_MARGIN_S
    done = {dg.DagsterRunStatus.SUCCESS}
    midnight = datetime.combine(DAY + timedelta(days=1), datetime.min.time(), UTC)

    with run_queue(max(0.05, DEQUEUE_SHARE * scale.window_s)) as queue:

        def queue_day(label: str) -> list[str]:
            """The daily schedule's runs of the day, each landing its own window (a fresh token)."""
            context = dg.build_schedule_context(scheduled_execution_time=midnight + timedelta(minutes=30))
            return [queue.submit(INGESTION_JOB, r.with_replaced_attrs(
                        tags={**r.tags, WINDOW_TAG: f"{r.tags[WINDOW_TAG]}-{label}"}))
                    for r in daily_ingestion(context)]

        def queue_round(hour: int) -> list[str]:
            context = dg.build_schedule_context(scheduled_execution_time=midnight + timedelta(hours=hour))
            return [queue.submit(ORDERBOOK_JOB, r) for r in orderbook_rounds(context)]

        settle_s = budget_window_s if scale.settle else 0.0  # until the phase's requests have left the budget
        if scale.warm_up:
            queue.wait_until(queue_day("warm-up"), done, timeout_s=600)
            time.sleep(settle_s)
        alone = queue_day("alone")
        queue.wait_until(alone, done, timeout_s=600)
        time.sleep(settle_s)

        rounds: list[str] = []
        beside: dict[str, list[str]] = {}
        holding: dict[str, list[str]] = {}  # the round runs holding the pool when the day was queued
        started = time.monotonic()
        for hour in range(scale.hours):
            time.sleep(max(0.0, started + hour * scale.hour_s - time.monotonic()))
            hour_rounds = queue_round(hour)
            rounds += hour_rounds
            if hour == 0 and scale.hours > 1:
                beside[AT_TICK] = queue_day("at-tick")
                holding[AT_TICK] = _in_progress(queue.instance, hour_rounds)
            elif hour == min(1, scale.hours - 1):
                queue.wait_until(hour_rounds[:1], {dg.DagsterRunStatus.STARTED}, timeout_s=scale.hour_s)
                beside[WHILE_RUNNING] = queue_day("while-running")
                holding[WHILE_RUNNING] = _in_progress(queue.instance, hour_rounds)
            queue.wait_until(hour_rounds + [r for ids in beside.values() for r in ids], done, timeout_s=600)
        records = {r.dagster_run.run_id: r for r in queue.instance.get_run_records()}
        round_markets = _round_markets(queue.instance, rounds)

    def timing(run_id: str) -> tuple[float, float]:
        record = records[run_id]
        assert record.start_time and record.end_time
        return record.start_time - record.create_timestamp.timestamp(), record.end_time - record.start_time

    daily = []
    for name, ids in beside.items():
        round_run_s = max((records[r].end_time - records[r].start_time for r in holding[name]  # type: ignore[operator]
                           ), default=0.0)
        bound_s = round_run_s + 2 * ROUND_MARKETS / 100 * budget_window_s  # the round's wall time + N + W of budget
        for run_id, twin in zip(ids, alone, strict=True):
            (wait, duration), (wait_alone, duration_alone) = timing(run_id), timing(twin)
            daily.append({
                "scenario": name, "platform": records[run_id].dagster_run.tags["dagster/partition/platform"],
                "wait_alone_s": round(wait_alone, 2), "wait_s": round(wait, 2),
                "duration_alone_s": round(duration_alone, 2), "duration_s": round(duration, 2),
                "delay_s": round(wait + duration - wait_alone - duration_alone, 2),
                "round_run_s": round(round_run_s, 2), "bound_s": round(bound_s, 2),
            })
    return {"daily": daily, "rounds": len(rounds), "round_markets": round_markets,
            "round_requests": sum(round_markets), "budget_window_s": budget_window_s,
            "round_run_s": max(d["round_run_s"] for d in daily)}


def _in_progress(instance: Any, run_ids: list[str]) -> list[str]:
    """The runs of `run_ids` launched and not yet ended."""
    import dagster as dg

    launched = {dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED}
    return [r for r in run_ids if instance.get_run_by_id(r).status in launched]


def _round_markets(instance: Any, run_ids: list[str]) -> list[int]:
    """The markets of each round run (one request each), from its `orderbook_snapshots` materialisation."""
    import dagster as dg

    records = instance.fetch_materializations(dg.AssetKey("orderbook_snapshots"), limit=1000).records
    markets = {r.run_id: int(r.asset_materialization.metadata["markets"].value) for r in records}
    return [markets[run_id] for run_id in run_ids]
