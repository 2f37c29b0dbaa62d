"""Snapshot rounds beside the daily ingestion under the strict budget: 429s met, and how long the daily run waits.

Against the sandbox served on loopback in strict mode (100 requests per rate window), with time scaled down: the
sandbox's window and the pipeline's (PMW_RATE_WINDOW_S) are `window_s` instead of a minute, and an "hour" of
rounds is 60 windows. Runs go through Dagster's run queue as the daemon drives it (benchmarks/run_queue.py: the
QueuedRunCoordinator, pipeline/defs/dagster.yaml's pools, the `dagster/priority` tags), created from the schedules' own
run requests (`daily_ingestion`, `orderbook_rounds`): one run per (platform, day), one per platform's round. A
round is the watch list's 20 markets of each platform (N = 0, W = 40 over the two platforms).

In a fresh process with a private data directory:
1. (full mode) a warm-up landing of the day, so that every measured landing is a re-run of it;
2. the day landed alone: each daily run's time from queued to started and to ended, and its budget waits;
3. hourly rounds, the day landed again in the first two hours: once queued at the round's tick just after the
   round's runs (the two schedules ticking together), once queued while a round's run is running (the worst
   case: the round already holds the `unified_api` pool);
4. (full mode) the day landed alone once more: a daily run's twin alone is the mean of phases 2 and 4, so that a
   drift of the machine's speed over the benchmark does not pass for the rounds' doing.

The rounds can delay a daily run in two ways only: a round holds the pool while the daily run is queued, and the
rounds' requests stay in the budget's window after they ended. So a daily run's delay is the time it was queued
while a round ran (`held`) plus its extra seconds waiting for the budget next to its twin alone (`budget`);
its extra time from queued to ended is shown too, with the shared machine's noise in it. The bound
(docs/operating.md, "How the budget is split"): the daily run waits at most for the round already running when it is
queued, so the delay is at most that round run's wall time plus (N + W) / 100 of the budget's window (the rate window
plus the budget's margin, pipeline/engine/sources/request_budget.py).
"""

from __future__ import annotations

import os
import shutil
import statistics
import time
from dataclasses import asdict, dataclass
from datetime import UTC, date, datetime, timedelta
from itertools import pairwise
from pathlib import Path
from typing import Any

from benchmarks.child import run_in_child
from benchmarks.report import Report, Target
from pipeline.engine.schema import Platform

SEED = 5
DAY = date(2026, 11, 21)  # the day the daily runs land; the rounds tick on the day after
SECRET = "sk-bench-snapshots-4d2a"
ROUND_MARKETS = 20
BOUND_REQUESTS = 40  # the N + W of docs/operating.md: a round of 20 markets on each of the two platforms
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
    alone_after: bool  # land the day alone once more after the rounds: the twin is the mean of both alone landings

    @property
    def hour_s(self) -> float:
        return 60 * self.window_s


FULL = Scale(window_s=2.0, hours=2, platforms=PLATFORMS, events_per_series=3, markets_per_event=15, warm_up=True,
             settle=True, alone_after=True)
# Quick: one platform's day in a world of 9 markets, alone and then queued while the one round runs; its Dagster
# instance and data in memory (/dev/shm) where there is one: it proves the benchmark runs, its figures mean nothing.
QUICK = Scale(window_s=0.25, hours=1, platforms=("kalshi",), events_per_series=1, markets_per_event=3,
              warm_up=False, settle=False, alone_after=False)
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
    worst = max(daily, key=lambda d: d["ratio"])
    return Report(
        name="snapshots",
        title=f"Snapshot rounds beside the daily ingestion: strict sandbox (100 requests per {scale.window_s:g} s "
              f"window, an hour = {scale.hour_s:g} s), hourly rounds of up to {ROUND_MARKETS} markets on "
              f"{', '.join(scale.platforms)} for {scale.hours} hour(s), seed {SEED}",
        columns=["daily run", "platform", "queued s alone", "queued s", "run s alone", "run s", "extra s",
                 "rounds waited", "held s", "budget s", "delay s", "bound s", "delay/bound"],
        rows=[[d["scenario"], d["platform"], d["wait_alone_s"], d["wait_s"], d["run_alone_s"], d["run_s"],
               d["extra_s"], d["rounds_waited_for"], d["held_s"], d["budget_s"], d["delay_s"], d["bound_s"],
               d["ratio"]] for d in daily],
        figures={"scale": asdict(scale), **figures},
        targets=[
            Target("no 429 under the strict budget", figures["rate_limited"] == 0,
                   f"{figures['rate_limited']} answered 429 of {figures['requests_served']} requests served, "
                   f"{figures['round_requests']} of them by {figures['rounds']} round runs; busiest "
                   f"{scale.window_s:g} s window {figures['busiest_window']} requests of 100"),
            Target("the unified_api pool admitted one run at a time", figures["overlapping_runs"] == 0,
                   f"{figures['overlapping_runs']} of {figures['runs']} runs started before the one before ended"),
            Target("each daily run waited for at most the one round already running",
                   all(d["rounds_waited_for"] <= 1 for d in daily),
                   f"rounds waited for: {', '.join(str(d['rounds_waited_for']) for d in daily)}"),
            Target("no daily run delayed by the rounds past the bound",
                   all(d["delay_s"] <= d["bound_s"] for d in daily),
                   f"worst {worst['delay_s']:.2f} s of {worst['bound_s']:.2f} s ({worst['ratio']:.2f}x): "
                   f"{worst['platform']}, {worst['scenario']}"),
        ],
        notes=[f"rounds: {figures['rounds']} runs of {', '.join(str(n) for n in figures['round_markets'])} markets; "
               f"the budget's window is {figures['budget_window_s']:g} s (the rate window plus its margin)",
               "queued s: from queued to started; extra s: from queued to ended, beside the rounds minus alone "
               "(the shared machine's noise included); held s: queued while a round held the pool; budget s: extra "
               "seconds waiting for the request budget; delay = held + budget; bound: the wall time of the round "
               f"waited for plus (N + W) / 100 of the budget's window, N + W = {BOUND_REQUESTS}"],
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
    admitted = _record_admissions(app)
    with SandboxServer(app, port=0) as server:
        os.environ.update(_settings(server.url, Path(data_dir), watchlist, chosen))
        measured = _phases(chosen)
    return {**measured, "requests_served": app.requests_served, "rate_limited": app.rate_limited_answers,
            "busiest_window": _busiest(sorted(admitted), chosen.window_s)}


def _record_admissions(app: Any) -> list[float]:
    """The times (the sandbox's clock) of the requests its rate limiter admits, from now on."""
    admitted: list[float] = []
    admit = app.limiter.admit

    def recording(key: str) -> float | None:
        wait = admit(key)
        if wait is None:
            admitted.append(app.clock())
        return wait

    app.limiter.admit = recording
    return admitted


def _busiest(times: list[float], window_s: float) -> int:
    """The most requests inside any one rate window: how close the pipeline came to the sandbox's 100."""
    busiest, first = 0, 0
    for last, moment in enumerate(times):
        while moment - times[first] >= window_s:
            first += 1
        busiest = max(busiest, last - first + 1)
    return busiest


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
    from pipeline.defs.automation.schedule import daily_ingestion_schedule
    from pipeline.defs.ingestion.windows import WINDOW_TAG
    from pipeline.defs.orderbooks.schedule import ORDERBOOK_JOB, orderbook_rounds_schedule
    from pipeline.engine.config import Settings

    settings = Settings.from_env(credentials=False)  # as the code location parses them
    daily_ingestion, orderbook_rounds = daily_ingestion_schedule(settings), orderbook_rounds_schedule(settings)

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
        started = time.monotonic()
        for hour in range(scale.hours):
            time.sleep(max(0.0, started + hour * scale.hour_s - time.monotonic()))
            hour_rounds = queue_round(hour)
            rounds += hour_rounds
            if hour == 0 and scale.hours > 1:
                beside[AT_TICK] = queue_day("at-tick")
            elif hour == min(1, scale.hours - 1):
                queue.wait_until(hour_rounds[:1], {dg.DagsterRunStatus.STARTED}, timeout_s=scale.hour_s)
                beside[WHILE_RUNNING] = queue_day("while-running")
            queue.wait_until(hour_rounds + [r for ids in beside.values() for r in ids], done, timeout_s=600)
        twins = [[run_id] for run_id in alone]
        if scale.alone_after:
            time.sleep(settle_s)
            after = queue_day("alone-after")
            queue.wait_until(after, done, timeout_s=600)
            twins = [[before, later] for before, later in zip(alone, after, strict=True)]
        records = {r.dagster_run.run_id: r for r in queue.instance.get_run_records()}
        round_markets = _round_markets(queue.instance, rounds)
        waited = {run_id: _budget_waited(queue.instance, run_id)
                  for ids in [*twins, *beside.values()] for run_id in ids}

    spans = {run_id: _span(records[run_id]) for run_id in records}
    daily = [_daily_figures(name, run_id, twin, spans, [spans[r] for r in rounds], waited, budget_window_s,
                            records[run_id].dagster_run.tags["dagster/partition/platform"])
             for name, ids in beside.items() for run_id, twin in zip(ids, twins, strict=True)]
    ordered = sorted((start, end) for _, start, end in spans.values())
    return {"daily": daily, "rounds": len(rounds), "round_markets": round_markets,
            "round_requests": sum(round_markets), "budget_window_s": budget_window_s, "runs": len(records),
            "overlapping_runs": sum(start < end for (_, end), (start, _) in pairwise(ordered))}


Span = tuple[float, float, float]  # a run's queued, started and ended times (epoch seconds)


def _span(record: Any) -> Span:
    assert record.start_time and record.end_time, f"run {record.dagster_run.run_id} did not end"
    return record.create_timestamp.timestamp(), record.start_time, record.end_time


def _daily_figures(scenario: str, run_id: str, twins: list[str], spans: dict[str, Span], round_spans: list[Span],
                   waited: dict[str, float], budget_window_s: float, platform: str) -> dict[str, Any]:
    """A daily run beside the rounds next to its twins alone (the mean of them): what the rounds cost it, against
    the bound.

    Held: the time it spent queued while a round run held the pool (the rounds it waited for). Budget: its extra
    seconds waiting for the request budget (the rounds' requests stay in the budget's window for a window).
    The bound: the wall time of the round it waited for, plus (N + W) / 100 of the budget's window."""
    queued, start, end = spans[run_id]
    wait_alone = statistics.mean(spans[t][1] - spans[t][0] for t in twins)
    runs_alone = [spans[t][2] - spans[t][1] for t in twins]
    held = [min(r_end, start) - max(r_start, queued) for _, r_start, r_end in round_spans
            if r_start < start and r_end > queued]
    held_by = [r_end - r_start for _, r_start, r_end in round_spans if r_start < start and r_end > queued]
    budget_s = waited[run_id] - statistics.mean(waited[t] for t in twins)
    delay_s = sum(held) + budget_s
    bound_s = max(held_by, default=0.0) + BOUND_REQUESTS / 100 * budget_window_s
    return {
        "scenario": scenario, "platform": platform,
        "wait_alone_s": round(wait_alone, 2), "wait_s": round(start - queued, 2),
        "run_alone_s": round(statistics.mean(runs_alone), 2), "runs_alone_s": [round(r, 2) for r in runs_alone],
        "run_s": round(end - start, 2), "extra_s": round((end - queued) - wait_alone - statistics.mean(runs_alone), 2),
        "rounds_waited_for": len(held), "held_s": round(sum(held), 2), "budget_s": round(budget_s, 2),
        "delay_s": round(delay_s, 2), "bound_s": round(bound_s, 2), "ratio": round(delay_s / bound_s, 2),
    }


def _budget_waited(instance: Any, run_id: str) -> float:
    """Seconds the run's steps waited for the request budget, from its materialisations' metadata."""
    import dagster as dg

    records = instance.get_records_for_run(run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION).records
    values = [r.event_log_entry.asset_materialization.metadata.get("seconds_waited") for r in records]
    return sum(float(v.value) for v in values if v is not None)


def _round_markets(instance: Any, run_ids: list[str]) -> list[int]:
    """The markets of each round run (one request each), from its `orderbook_snapshots` materialisation."""
    import dagster as dg

    records = instance.fetch_materializations(dg.AssetKey("orderbook_snapshots"), limit=1000).records
    markets = {r.run_id: int(r.asset_materialization.metadata["markets"].value) for r in records}
    return [markets[run_id] for run_id in run_ids]
