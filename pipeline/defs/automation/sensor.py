"""The backfill sensor: fills the missing partitions of the history window as fast as the budget allows.

Each tick reads the instance (what landed, what is queued or running, what recent materialisations cost
and whether they met 429s) and the lake (a partition recorded as landed counts only while its five files are
there and read), works out the budget (see `budget.py`), and asks for the missing partitions, in the
configured order, that fit in it; a platform's consecutive days among them are one window, whose trades and
price history are read in one sweep. Run keys make a repeated tick idempotent; a partition whose runs failed is
asked for again under a new key, at most `MAX_ATTEMPTS` times, and one whose files were lost after it landed
under a key naming the record it replaces.
"""

from __future__ import annotations

import logging
import statistics
from collections import Counter, defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta

import dagster as dg

from pipeline.defs.automation.budget import (
    Budget,
    CostModel,
    PartitionRef,
    Sample,
    SensorCursor,
    horizon_for,
    next_backoff_level,
    take_within,
    window,
)
from pipeline.defs.automation.holds import Holds, platform_holds
from pipeline.defs.automation.jobs import ASSET_NAMES, ingestion_job, register_api_pools
from pipeline.defs.automation.lake_records import lost_partitions, recorded_partitions
from pipeline.defs.automation.schedule import daily_partitions, next_daily_tick
from pipeline.defs.common.tags import BACKFILL_PRIORITY, PRIORITY_TAG, TRIGGER_TAG
from pipeline.defs.ingestion.windows import WINDOW_DAYS, WINDOW_TAG
from pipeline.defs.orderbooks.schedule import ORDERBOOK_JOB
from pipeline.defs.profiles.schedule import TRADERS_JOB
from pipeline.engine.config import BackfillOrder, Settings
from pipeline.engine.lake.store import Lake
from pipeline.engine.spool.window import Window, windows_of

BACKFILL_TRIGGER = "backfill_sensor"
ESTIMATE_TAG = "pmw/estimated_requests"  # what the sensor expects the run to cost, in requests
SAMPLE_SIZE = 20  # recent materialisations per asset behind each cost estimate
MAX_ATTEMPTS = 3  # runs of one partition that may fail before the sensor leaves it to a person
PARTITION_TAG = "dagster/partition"
ASSET_KEYS = [dg.AssetKey(name) for name in ASSET_NAMES]
NOT_FINISHED = (
    dg.DagsterRunStatus.QUEUED,
    dg.DagsterRunStatus.NOT_STARTED,
    dg.DagsterRunStatus.STARTING,
    dg.DagsterRunStatus.STARTED,
    dg.DagsterRunStatus.CANCELING,
)
STARTED = (dg.DagsterRunStatus.STARTED, dg.DagsterRunStatus.CANCELING)  # may have landed some assets
# The watch lists' jobs spend the same budget: the asset whose materialisation records a run's requests, and what a
# run is taken to cost before one of its platform has landed (a round of 20 markets; two traders, a page each).
WATCH_LIST_JOBS = {ORDERBOOK_JOB: ("orderbook_snapshots", 20.0), TRADERS_JOB: ("profiles", 4.0)}
# How long after its tick the daily schedule's days stay its own while none of its runs is queued: the daemon launches
# a tick's runs within seconds, but a loaded host, a restarting daemon or a code location still loading can take
# minutes, and the sensor asking for the same days meanwhile would pull them twice.
SCHEDULE_GRACE_S = 15 * 60


@dataclass(frozen=True)
class InFlight:
    """A queued or running run of ingestion assets, and the assets it has still to land."""

    ref: PartitionRef
    remaining: frozenset[str]


def recent_samples(instance: dg.DagsterInstance) -> list[Sample]:
    """The latest materialisations of each ingestion asset, with the requests and 429s they recorded."""
    samples = []
    for key in ASSET_KEYS:
        for record in instance.fetch_materializations(key, limit=SAMPLE_SIZE).records:
            materialization = record.asset_materialization
            if materialization is None or record.partition_key is None:
                continue
            metadata = {name: value.value for name, value in materialization.metadata.items()}
            samples.append(
                Sample(
                    platform=PartitionRef.parse(record.partition_key).platform,
                    asset=key.to_user_string(),
                    requests=int(metadata.get("requests", 0)),  # type: ignore[arg-type]
                    rate_limited=int(metadata.get("rate_limited_answers", 0)),  # type: ignore[arg-type]
                    storage_id=record.storage_id,
                    window_days=int(metadata.get(WINDOW_DAYS, 1)),  # type: ignore[arg-type]
                )
            )
    return samples


def landed_partitions(instance: dg.DagsterInstance, lake: Lake) -> tuple[set[PartitionRef], dict[PartitionRef, int]]:
    """The partitions of which all five assets have been materialised and whose five files are in the lake and
    read; and those recorded as landed whose files are not (gone, emptied, unreadable), each with the storage
    id of its newest record, which names its refill's run apart from the runs that filled it before."""
    recorded = recorded_partitions(instance)
    complete = set.intersection(*recorded.values())
    lost = complete & set().union(*lost_partitions(lake, recorded).values())
    return complete - lost, {ref: _newest_record(instance, ref) for ref in lost}


def _newest_record(instance: dg.DagsterInstance, ref: PartitionRef) -> int:
    records = [
        record
        for key in ASSET_KEYS
        for record in instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=key, asset_partitions=[str(ref.key)]), limit=1
        ).records
    ]
    return max(record.storage_id for record in records)


def runs_in_flight(instance: dg.DagsterInstance) -> list[InFlight]:
    """Queued and running runs of the ingestion assets, whoever launched them (schedule, UI, pmw backfill)."""
    flights = []
    for run in instance.get_runs(filters=dg.RunsFilter(statuses=list(NOT_FINISHED))):
        partition = run.tags.get(PARTITION_TAG)
        selected = _selected_assets(run)
        if partition is None or not selected:
            continue
        if run.status in STARTED:
            selected -= _landed_in_run(instance, run.run_id)
        flights.append(InFlight(PartitionRef.parse(partition), frozenset(selected)))
    return flights


def watch_lists_in_flight(instance: dg.DagsterInstance) -> float:
    """The requests that queued and running snapshot rounds and traders' days have still to make: for each run, the
    median of the requests its job's recent runs recorded on its platform (WATCH_LIST_JOBS' default before any),
    none once it has landed."""
    total = 0.0
    for job, (asset, default) in WATCH_LIST_JOBS.items():
        runs = [run for run in instance.get_runs(filters=dg.RunsFilter(job_name=job, statuses=list(NOT_FINISHED)))
                if not (run.status in STARTED and asset in _landed_in_run(instance, run.run_id))]
        recorded: dict[str, list[float]] = defaultdict(list)
        for record in instance.fetch_materializations(dg.AssetKey(asset), limit=SAMPLE_SIZE).records if runs else ():
            requests = record.asset_materialization.metadata.get("requests") if record.asset_materialization else None
            if record.partition_key is not None and requests is not None:
                platform = PartitionRef.parse(record.partition_key).platform
                recorded[platform].append(float(requests.value))  # type: ignore[arg-type]
        for run in runs:
            partition = run.tags.get(PARTITION_TAG)
            costs = recorded.get(PartitionRef.parse(partition).platform) if partition else None
            total += statistics.median(costs) if costs else default
    return total


def _selected_assets(run: dg.DagsterRun) -> set[str]:
    if run.asset_selection is None:
        return set(ASSET_NAMES) if run.job_name == ingestion_job.name else set()
    return {key.to_user_string() for key in run.asset_selection} & set(ASSET_NAMES)


def _landed_in_run(instance: dg.DagsterInstance, run_id: str) -> set[str]:
    records = instance.get_records_for_run(run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION).records
    return {
        r.event_log_entry.dagster_event.asset_key.to_user_string()  # type: ignore[union-attr]
        for r in records
        if r.event_log_entry.dagster_event is not None
    }


def failed_attempts(instance: dg.DagsterInstance) -> Counter[PartitionRef]:
    """How many of the sensor's runs of each partition failed or were cancelled."""
    runs = instance.get_runs(
        filters=dg.RunsFilter(
            statuses=[dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED],
            tags={TRIGGER_TAG: BACKFILL_TRIGGER},
        )
    )
    return Counter(PartitionRef.parse(run.tags[PARTITION_TAG]) for run in runs if PARTITION_TAG in run.tags)


def run_key(ref: PartitionRef, attempt: int, refill_of: int | None = None) -> str:
    """The run key of a partition's run: one per attempt, and a new one to refill a partition whose files were lost
    after the record `refill_of` (Dagster skips a run request under a key it has seen)."""
    base = f"backfill:{ref.platform}:{ref.day}" + (f":refill-after-{refill_of}" if refill_of is not None else "")
    return base if attempt == 0 else f"{base}:retry-{attempt}"


@dataclass(frozen=True)
class Plan:
    """What one tick asks for, and everything the UI needs to explain it."""

    requests: list[dg.RunRequest]
    cursor: SensorCursor
    budget: Budget
    next_up: str  # the first missing partition left for a later tick and its cost, or ""
    holds: Holds = field(default_factory=Holds)  # the platforms the service holds, whose partitions the tick left out

    def summary(self) -> str:
        asked = f"asked for {len(self.requests)} partitions" if self.requests else "asked for nothing"
        waiting = f"; next: {self.next_up}" if self.next_up else ""
        held = f"; {self.holds.summary()}" if self.holds.summary() else ""
        return (
            f"{asked}; {self.cursor.landed}/{self.cursor.partitions} partitions of {self.cursor.window} "
            f"landed, {self.cursor.in_flight} queued or running{waiting}{held}; {self.budget.describe()}"
        )


def plan_tick(
    settings: Settings,
    now: datetime,
    previous: SensorCursor,
    samples: list[Sample],
    landed: set[PartitionRef],
    flights: list[InFlight],
    failures: Counter[PartitionRef],
    lost: Mapping[PartitionRef, int] | None = None,
    watch_lists: float = 0.0,
    holds: Holds | None = None,
) -> Plan:
    """The missing partitions of the window that fit in this tick's budget, in the configured order. `lost` are
    partitions recorded as landed whose files are gone or unreadable: missing too, refilled under a new key;
    `watch_lists` the requests that queued and running snapshot rounds and traders' days have still to make;
    `holds` the platforms the service holds (holds.py), whose partitions wait for a later tick."""
    lost, holds = lost or {}, holds or Holds()
    costs = CostModel.from_samples(ASSET_NAMES, samples)
    saw_429s = any(s.rate_limited > 0 for s in samples if s.storage_id > previous.watermark)
    budget, daily_soon = tick_budget(
        settings, now, costs, next_backoff_level(previous.backoff_level, saw_429s), flights, watch_lists, landed
    )
    end = newest_scheduled_day(now, settings.automation.daily_at)
    newest_first = settings.automation.backfill_order == BackfillOrder.NEWEST_FIRST
    wanted = window(settings.backfill_start, end, [p.value for p in settings.platforms], newest_first)
    given_up = [ref for ref in wanted if failures[ref] >= MAX_ATTEMPTS and ref not in landed]
    busy = {f.ref for f in flights} | set(daily_soon) | set(given_up)
    missing = [ref for ref in wanted if ref not in landed and ref not in busy and ref.platform not in holds.held]
    chosen = take_within(missing, lambda ref: costs.cost(ref.platform), budget.available)
    cursor = SensorCursor(
        watermark=max([previous.watermark, *(s.storage_id for s in samples)]),
        backoff_level=budget.backoff_level,
        window=f"{settings.backfill_start}..{end}",
        partitions=len(wanted),
        landed=sum(ref in landed for ref in wanted),
        in_flight=len({f.ref for f in flights}),
        requested=len(chosen),
        given_up=[str(ref) for ref in given_up],
        available=budget.available,
        budget=budget.describe(),
    )
    windows = tick_windows(chosen, now)
    requests = [_run_request(ref, failures[ref], costs.cost(ref.platform), lost.get(ref), windows[ref])
                for ref in chosen]
    left = missing[len(chosen) :]
    next_up = f"{left[0]} (~{costs.cost(left[0].platform):.0f} requests)" if left else ""
    return Plan(requests, cursor, budget, next_up, holds)


def tick_budget(
    settings: Settings, now: datetime, costs: CostModel, backoff_level: int, flights: list[InFlight],
    watch_lists: float = 0.0, landed: set[PartitionRef] | None = None,
) -> tuple[Budget, list[PartitionRef]]:
    """This tick's budget (see `budget.py`), and the daily schedule's partitions it leaves to the schedule and
    reserves for (neither queued, running nor landed), if any."""
    largest = costs.largest(p.value for p in settings.platforms)
    horizon_s = horizon_for(settings.rate_limit_per_min, settings.automation.backfill_interval_s, largest,
                            settings.rate_window_s)
    done = {f.ref for f in flights} | (landed or set())
    daily_soon = [ref for ref in daily_partitions_within(settings, now, horizon_s) if ref not in done]
    budget = Budget(
        settings.rate_limit_per_min,
        horizon_s,
        backoff_level,
        in_flight=sum(costs.cost(f.ref.platform, f.remaining) for f in flights) + watch_lists,
        reserve=sum(costs.cost(ref.platform) for ref in daily_soon),
        window_s=settings.rate_window_s,
    )
    return budget, daily_soon


def newest_scheduled_day(now: datetime, daily_at: time) -> date:
    """The end of the window: the newest day the daily schedule (ticking at `daily_at`) has asked for; newer days
    are its to pull."""
    return (next_daily_tick(now, daily_at) - timedelta(days=1)).date() - timedelta(days=1)


def daily_partitions_within(settings: Settings, now: datetime, horizon_s: float) -> list[PartitionRef]:
    """The daily schedule's partitions when its next tick comes within the horizon, or its last tick was less than
    the horizon or SCHEDULE_GRACE_S ago (the schedule may not have queued that tick's runs yet), else none."""
    tick = next_daily_tick(now, settings.automation.daily_at)
    last = tick - timedelta(days=1)
    if tick - now <= timedelta(seconds=horizon_s):
        return daily_partitions(tick.date(), settings)
    if now - last <= timedelta(seconds=max(horizon_s, SCHEDULE_GRACE_S)):
        return daily_partitions(last.date(), settings)
    return []


def tick_windows(chosen: list[PartitionRef], now: datetime) -> dict[PartitionRef, Window]:
    """The window of each partition a tick asks for: a platform's consecutive days of the tick are one, read
    in one sweep (pipeline.engine.spool.window), named by the tick."""
    token = f"{BACKFILL_TRIGGER}-{now.astimezone(UTC).strftime('%Y%m%dT%H%M%S')}"
    windows = {}
    for platform in {ref.platform for ref in chosen}:
        days = [ref.day for ref in chosen if ref.platform == platform]
        windows |= {PartitionRef(day, platform): w for w in windows_of(days, token) for day in w.days}
    return windows


def _run_request(ref: PartitionRef, attempt: int, estimate: float, refill_of: int | None,
                 window: Window) -> dg.RunRequest:
    return dg.RunRequest(
        run_key=run_key(ref, attempt, refill_of),
        partition_key=ref.key,
        tags={TRIGGER_TAG: BACKFILL_TRIGGER, PRIORITY_TAG: BACKFILL_PRIORITY, ESTIMATE_TAG: str(round(estimate)),
              WINDOW_TAG: window.tag},
    )


def _previous_cursor(raw: str | None, log: logging.Logger) -> SensorCursor:
    """The last tick's cursor; an unreadable one costs only the 429 back-off state, so start afresh."""
    try:
        return SensorCursor.parse(raw)
    except ValueError as error:
        log.warning("%s; starting from a fresh cursor", error)
        return SensorCursor()


def _observe(instance: dg.DagsterInstance, lake: Lake) -> tuple[
        list[Sample], set[PartitionRef], list[InFlight], Counter[PartitionRef], dict[PartitionRef, int], float]:
    landed, lost = landed_partitions(instance, lake)
    return (recent_samples(instance), landed, runs_in_flight(instance), failed_attempts(instance), lost,
            watch_lists_in_flight(instance))


def evaluate(context: dg.SensorEvaluationContext, settings: Settings, now: datetime | None = None) -> dg.SensorResult:
    """One tick: observe the instance, plan, and say why in the result (the UI shows it)."""
    register_api_pools(context.instance)
    previous = _previous_cursor(context.cursor, context.log)
    now = now or datetime.now(UTC)
    observed = _observe(context.instance, Lake.of(settings))
    plan = plan_tick(settings, now, previous, *observed)
    if plan.requests:  # about to start runs: first ask the service which platforms it holds (one request)
        holds = platform_holds((p.value for p in settings.platforms), settings)
        if holds.summary():
            plan = plan_tick(settings, now, previous, *observed, holds=holds)
    context.log.info(plan.summary())
    if not plan.requests:
        return dg.SensorResult(skip_reason=plan.summary(), cursor=plan.cursor.dump())
    return dg.SensorResult(run_requests=plan.requests, cursor=plan.cursor.dump())


def backfill_sensor(settings: Settings) -> dg.SensorDefinition:
    """The backfill sensor of the code location's `settings`, ticking every PMW_BACKFILL_INTERVAL_S seconds."""

    @dg.sensor(
        name="backfill_sensor",
        job=ingestion_job,
        minimum_interval_seconds=settings.automation.backfill_interval_s,
        description="Fills the missing (platform, day) partitions from PMW_BACKFILL_START to the newest day the daily "
        "schedule has pulled, asking per tick only for what PMW_RATE_LIMIT_PER_MIN (per PMW_RATE_WINDOW_S, a minute "
        "by default) allows after queued and running runs and the daily run's reserve.",
    )
    def backfill(context: dg.SensorEvaluationContext) -> dg.SensorResult:
        return evaluate(context, settings)

    return backfill
