"""The daily schedule, the backfill sensor, the freshness checks and dagster.yaml, with Dagster's test contexts."""

from __future__ import annotations

import json
import os
import time as time_
import uuid
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path

import dagster as dg
import polars as pl
import pytest
import yaml
from dagster._core.events import StepMaterializationData

from pipeline.definitions import defs
from pipeline.defs.automation.budget import (
    DEFAULT_PARTITION_COST,
    Budget,
    CostModel,
    PartitionRef,
    Sample,
    SensorCursor,
    horizon_for,
)
from pipeline.defs.automation.jobs import API_POOLS, ASSET_NAMES, register_api_pools
from pipeline.defs.automation.schedule import daily_ingestion_schedule
from pipeline.defs.automation.sensor import (
    MAX_ATTEMPTS,
    SCHEDULE_GRACE_S,
    InFlight,
    backfill_sensor,
    evaluate,
    newest_scheduled_day,
    plan_tick,
    run_key,
    runs_in_flight,
    watch_lists_in_flight,
)
from pipeline.defs.automation.yesterday_landed import freshness_result
from pipeline.defs.common.cron import daily_cron
from pipeline.defs.common.jobs import STEP_RETRY_POLICY
from pipeline.defs.location import build_definitions
from pipeline.engine.config import AutomationSettings, BackfillOrder, ConfigError, Settings
from pipeline.engine.lake.store import Lake
from pipeline.engine.spool.window import Window
from tests.support.frames import sample_frame
from tests.support.paths import REPO_ROOT
from tests.support.runs import CODE_LOCATION

REPO = REPO_ROOT
TODAY = datetime.now(UTC).date()
YESTERDAY = TODAY - timedelta(days=1)
DAILY_AT = AutomationSettings().daily_at  # the schedule's default tick, 00:30 UTC
NOON = datetime.combine(TODAY, time(12), UTC)  # far from the daily tick: no reserve
PLATFORMS = ("polymarket", "kalshi")
# Recorded requests per asset of one partition: polymarket partitions cost 5 x 20, kalshi ones 5 x 30.
COST_PER_ASSET = {"polymarket": 20, "kalshi": 30}


@pytest.fixture
def automation_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A ten-day window ending yesterday, both platforms, 100 requests a minute, a tick a minute, a private lake."""
    monkeypatch.setenv("PMW_DATA_DIR", str(tmp_path / "data"))
    for name in ("PMW_PLATFORMS", "PMW_LOOKBACK_DAYS", "PMW_BACKFILL_ORDER", "PMW_RATE_WINDOW_S"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PMW_START_DATE", "2025-01-01")
    monkeypatch.setenv("PMW_BACKFILL_START", (TODAY - timedelta(days=10)).isoformat())
    monkeypatch.setenv("PMW_BACKFILL_INTERVAL_S", "60")
    monkeypatch.setenv("PMW_RATE_LIMIT_PER_MIN", "100")


def from_env() -> Settings:
    """The settings of the environment as the test has set it, as the code location parses them when it loads."""
    return Settings.from_env(credentials=False)


@pytest.fixture
def instance() -> Iterator[dg.DagsterInstance]:
    with dg.instance_for_test() as instance:
        yield instance


def land(
    instance: dg.DagsterInstance,
    ref: PartitionRef,
    requests: int | None = None,
    rate_limited: int = 0,
    assets: tuple[str, ...] = ASSET_NAMES,
) -> None:
    """Land a partition as the assets would: a file of a few rows per asset in the lake (PMW_DATA_DIR) and a
    materialisation recorded in the instance (requests and 429s as metadata)."""
    lake = Lake(Path(os.environ["PMW_DATA_DIR"]) / "lake", keep_versions=3)
    for asset in assets:
        written = lake.write_partition(asset, ref.platform, ref.day, sample_frame(asset, ref.platform, ref.day))
        instance.report_runless_asset_event(
            dg.AssetMaterialization(
                asset_key=asset,
                partition=str(ref.key),
                metadata={
                    "requests": COST_PER_ASSET[ref.platform] if requests is None else requests,
                    "rate_limited_answers": rate_limited,
                    "dagster/row_count": written.rows,
                    "checksum": written.checksum,
                },
            )
        )


def queue_run(
    instance: dg.DagsterInstance, ref: PartitionRef, status: dg.DagsterRunStatus, tags: dict[str, str] | None = None
) -> None:
    """A run of the ingestion job for `ref` in the instance, as the daemon would create it."""
    instance.add_run(
        dg.DagsterRun(
            job_name="ingestion",
            run_id=str(uuid.uuid4()),
            status=status,
            tags={"dagster/partition": str(ref.key), **(tags or {})},
            remote_job_origin=CODE_LOCATION.get_job_origin("ingestion"),
        )
    )


def partitions_of(requests: list[dg.RunRequest]) -> list[PartitionRef]:
    return [PartitionRef.parse(str(r.partition_key)) for r in requests]


def estimated(requests: list[dg.RunRequest]) -> int:
    return sum(int(r.tags["pmw/estimated_requests"]) for r in requests)


def window_refs(days: int) -> list[PartitionRef]:
    return [PartitionRef(YESTERDAY - timedelta(days=n), p) for n in range(days) for p in PLATFORMS]


# -- the daily schedule ------------------------------------------------------------------------------


def test_the_schedule_asks_for_yesterday_and_the_lookback(automation_env: None, instance: dg.DagsterInstance) -> None:
    land(instance, PartitionRef(YESTERDAY, "polymarket"))  # landed already: the look-back re-pulls anyway
    tick = datetime.combine(TODAY, DAILY_AT, UTC)
    context = dg.build_schedule_context(instance=instance, scheduled_execution_time=tick)
    daily_ingestion = daily_ingestion_schedule(from_env())
    requests = daily_ingestion(context)
    expected = {PartitionRef(YESTERDAY - timedelta(days=n), p) for n in range(3) for p in PLATFORMS}
    assert set(partitions_of(requests)) == expected and len(requests) == len(expected)
    assert len({r.run_key for r in requests}) == len(requests)
    assert all(r.tags["dagster/priority"] == "10" and r.tags["pmw/trigger"] == "daily" for r in requests)
    # the tick's days are one window, swept once per platform (pipeline.engine.spool.window)
    assert {r.tags["pmw/window"] for r in requests} == {f"{YESTERDAY - timedelta(days=2)}..{YESTERDAY}@daily-{TODAY}"}
    assert daily_ingestion.execution_timezone == "UTC"
    assert daily_ingestion.cron_schedule == "30 0 * * *"


def test_the_lookback_is_configurable(automation_env: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PMW_LOOKBACK_DAYS", "0")
    context = dg.build_schedule_context(scheduled_execution_time=datetime.combine(TODAY, DAILY_AT, UTC))
    assert set(partitions_of(daily_ingestion_schedule(from_env())(context))) == {
        PartitionRef(YESTERDAY, p) for p in PLATFORMS}


def test_the_daily_time_moves_the_schedule_and_the_end_of_the_sensors_window() -> None:
    """PMW_DAILY_AT=06:05: the cron ticks at 06:05 UTC, and until then the sensor leaves the day before yesterday
    as the newest day the schedule has pulled."""
    at = Settings.from_env({"PMW_DAILY_AT": "06:05"}, credentials=False).automation.daily_at
    assert daily_cron(at) == "5 6 * * *"
    assert newest_scheduled_day(datetime.combine(TODAY, time(6, 4), UTC), at) == YESTERDAY - timedelta(days=1)
    assert newest_scheduled_day(datetime.combine(TODAY, time(6, 5), UTC), at) == YESTERDAY


# -- the backfill sensor -----------------------------------------------------------------------------


def test_the_sensor_asks_only_for_missing_partitions_within_its_budget(
    automation_env: None, instance: dg.DagsterInstance
) -> None:
    # Inside the window whatever the time of day (before 00:30 UTC it ends the day before yesterday).
    landed = {
        PartitionRef(YESTERDAY - timedelta(days=1), "kalshi"),
        PartitionRef(YESTERDAY - timedelta(days=2), "polymarket"),
    }
    for ref in landed:
        land(instance, ref)
    context = dg.build_sensor_context(instance=instance)
    result = backfill_sensor(from_env())(context)
    cursor = SensorCursor(**json.loads(result.cursor))
    asked = partitions_of(result.run_requests)
    assert not set(asked) & landed
    assert set(asked) <= set(window_refs(10))
    assert estimated(result.run_requests) <= cursor.available
    assert cursor.requested == len(asked) and cursor.landed == 2

    again = backfill_sensor(from_env())(dg.build_sensor_context(instance=instance, cursor=result.cursor))
    assert [r.run_key for r in again.run_requests] == [r.run_key for r in result.run_requests]  # idempotent


def test_the_budget_decides_how_many_partitions_a_tick_asks_for(
    automation_env: None, instance: dg.DagsterInstance
) -> None:
    land(instance, PartitionRef(YESTERDAY, "kalshi"))
    land(instance, PartitionRef(YESTERDAY - timedelta(days=2), "polymarket"))
    result = evaluate(dg.build_sensor_context(instance=instance), from_env(), now=NOON)
    # 100/min over a 60 s tick plus the largest partition (kalshi, 150): 250 requests.
    cursor = SensorCursor(**json.loads(result.cursor))
    assert cursor.available == pytest.approx(250)
    assert partitions_of(result.run_requests) == [
        PartitionRef(YESTERDAY, "polymarket"),
        PartitionRef(YESTERDAY - timedelta(days=1), "polymarket"),
    ]
    assert estimated(result.run_requests) == 200  # the next one, kalshi at 150, would overrun the 250
    assert [r.run_key for r in result.run_requests] == [
        f"backfill:polymarket:{YESTERDAY}",
        f"backfill:polymarket:{YESTERDAY - timedelta(days=1)}",
    ]
    windows = {Window.parse(r.tags["pmw/window"]) for r in result.run_requests}  # one sweep for the two days
    assert [(w.first, w.last) for w in windows] == [(YESTERDAY - timedelta(days=1), YESTERDAY)]


def test_once_its_runs_are_queued_the_next_tick_asks_for_nothing_new(
    automation_env: None, instance: dg.DagsterInstance
) -> None:
    land(instance, PartitionRef(YESTERDAY, "kalshi"))
    first = evaluate(dg.build_sensor_context(instance=instance), from_env(), now=NOON)
    for ref in partitions_of(first.run_requests):
        queue_run(instance, ref, dg.DagsterRunStatus.QUEUED)
    second = evaluate(dg.build_sensor_context(instance=instance, cursor=first.cursor), from_env(), now=NOON)
    assert second.run_requests == []
    assert second.skip_reason is not None and "asked for nothing" in second.skip_reason.skip_message
    assert "minus 300 for queued and running runs" in second.skip_reason.skip_message


def test_the_order_is_configurable(
    automation_env: None, instance: dg.DagsterInstance, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PMW_BACKFILL_ORDER", "oldest_first")
    land(instance, PartitionRef(YESTERDAY, "kalshi"))
    land(instance, PartitionRef(YESTERDAY, "polymarket"))
    result = evaluate(dg.build_sensor_context(instance=instance), from_env(), now=NOON)
    assert partitions_of(result.run_requests)[0] == PartitionRef(TODAY - timedelta(days=10), "polymarket")


def test_failed_runs_are_retried_under_a_new_key_then_left_alone(
    automation_env: None, instance: dg.DagsterInstance
) -> None:
    land(instance, PartitionRef(YESTERDAY, "kalshi"))
    ref = PartitionRef(YESTERDAY, "polymarket")
    queue_run(instance, ref, dg.DagsterRunStatus.FAILURE, {"pmw/trigger": "backfill_sensor"})
    result = evaluate(dg.build_sensor_context(instance=instance), from_env(), now=NOON)
    assert result.run_requests[0].run_key == f"backfill:polymarket:{YESTERDAY}:retry-1"
    for _ in range(MAX_ATTEMPTS - 1):
        queue_run(instance, ref, dg.DagsterRunStatus.FAILURE, {"pmw/trigger": "backfill_sensor"})
    result = evaluate(dg.build_sensor_context(instance=instance), from_env(), now=NOON)
    assert ref not in partitions_of(result.run_requests)
    assert SensorCursor(**json.loads(result.cursor)).given_up == [str(ref)]


def test_a_queued_run_counts_its_whole_partition_and_a_run_of_other_assets_does_not(
    instance: dg.DagsterInstance,
) -> None:
    ref = PartitionRef(YESTERDAY, "kalshi")
    queue_run(instance, ref, dg.DagsterRunStatus.QUEUED)
    instance.add_run(
        dg.DagsterRun(
            job_name="freshness_checks",
            run_id=str(uuid.uuid4()),
            status=dg.DagsterRunStatus.QUEUED,
            remote_job_origin=CODE_LOCATION.get_job_origin("freshness_checks"),
        )
    )
    assert runs_in_flight(instance) == [InFlight(ref, frozenset(ASSET_NAMES))]


def test_queued_and_running_snapshot_rounds_and_traders_days_count_in_flight(instance: dg.DagsterInstance) -> None:
    """Each costs the median requests of its job's recent runs on its platform (a default before any); a running
    run that has landed costs nothing more; the plan subtracts them from the tick's budget."""
    def watch_run(job: str, platform: str, status: dg.DagsterRunStatus) -> str:
        run_id = str(uuid.uuid4())
        instance.add_run(dg.DagsterRun(job_name=job, run_id=run_id, status=status,
                                       tags={"dagster/partition": f"{YESTERDAY}|{platform}"},
                                       remote_job_origin=CODE_LOCATION.get_job_origin(job)))
        return run_id

    assert watch_lists_in_flight(instance) == 0
    watch_run("orderbook_snapshots", "kalshi", dg.DagsterRunStatus.QUEUED)
    watch_run("orderbook_snapshots", "manifold", dg.DagsterRunStatus.QUEUED)
    watch_run("watched_traders", "polymarket", dg.DagsterRunStatus.QUEUED)
    assert watch_lists_in_flight(instance) == 20 + 20 + 4  # nothing recorded yet: the defaults
    for requests in (18, 25, 22):
        instance.report_runless_asset_event(dg.AssetMaterialization(
            "orderbook_snapshots", partition=f"{YESTERDAY}|kalshi", metadata={"requests": requests}))
    landed = watch_run("orderbook_snapshots", "kalshi", dg.DagsterRunStatus.STARTED)
    assert watch_lists_in_flight(instance) == 22 + 22 + 20 + 4  # kalshi's median; the running one not landed yet
    instance.report_runless_asset_event(dg.AssetMaterialization(
        "orderbook_snapshots", partition=f"{YESTERDAY}|kalshi", metadata={"requests": 30}))
    instance.handle_new_event(_materialised_in(landed, "orderbook_snapshots", f"{YESTERDAY}|kalshi"))
    assert watch_lists_in_flight(instance) == 23.5 + 20 + 4  # the landed round is done; kalshi's median moved
    recorded = samples("kalshi", [30])
    idle = plan_tick(settings(), NOON, SensorCursor(), recorded, set(), [], Counter())
    busy = plan_tick(settings(), NOON, SensorCursor(), recorded, set(), [], Counter(), watch_lists=47.5)
    assert busy.budget.in_flight == idle.budget.in_flight + 47.5
    assert busy.budget.available == idle.budget.available - 47.5


def _materialised_in(run_id: str, asset: str, partition: str) -> dg.EventLogEntry:
    """The materialisation event of `asset` that a run records when it lands."""
    event = dg.DagsterEvent(
        event_type_value=dg.DagsterEventType.ASSET_MATERIALIZATION.value, job_name="orderbook_snapshots",
        event_specific_data=StepMaterializationData(dg.AssetMaterialization(asset, partition=partition)))
    return dg.EventLogEntry(error_info=None, level="INFO", user_message="", run_id=run_id, timestamp=time_.time(),
                            dagster_event=event)


# -- the budget arithmetic ---------------------------------------------------------------------------


def samples(platform: str, requests: list[int], rate_limited: int = 0, first_id: int = 1) -> list[Sample]:
    return [
        Sample(platform, asset, n, rate_limited, first_id + i) for i, n in enumerate(requests) for asset in ASSET_NAMES
    ]


def test_a_partition_costs_the_median_of_recent_requests_summed_over_its_assets() -> None:
    model = CostModel.from_samples(ASSET_NAMES, samples("kalshi", [10, 30, 1000]))
    assert model.cost("kalshi") == 5 * 30
    assert model.cost("kalshi", ["trades"]) == 30
    assert model.cost("polymarket") == DEFAULT_PARTITION_COST  # nothing recorded yet


def test_a_day_landed_in_a_window_costs_its_share_of_the_window_sweep() -> None:
    swept = [Sample("kalshi", "trades", 700, 0, 1, window_days=7)]  # the day that swept the window
    served = [Sample("kalshi", "trades", 0, 0, n, window_days=7) for n in range(2, 8)]  # its other six days
    alone = [Sample("kalshi", "trades", 250, 0, 9)]
    assert CostModel.from_samples(["trades"], swept + served).cost("kalshi") == 100
    assert CostModel.from_samples(["trades"], swept + served + alone).cost("kalshi") == 175  # median of 100, 250


def test_the_budget_is_a_tick_plus_the_largest_partition_less_what_is_in_flight_and_reserved() -> None:
    horizon_s = horizon_for(100, 30, largest_partition=300)
    assert horizon_s == 30 + 180
    budget = Budget(100, horizon_s, backoff_level=0, in_flight=120, reserve=40)
    assert budget.capacity == pytest.approx(50 + 300)
    assert budget.available == pytest.approx(350 - 120 - 40)
    assert Budget(100, horizon_s, backoff_level=1, in_flight=0, reserve=0).available == pytest.approx(175)
    assert Budget(100, horizon_s, backoff_level=0, in_flight=900, reserve=0).available == 0
    assert "at 100/min," in budget.describe()


def test_the_budget_counts_in_the_configured_rate_window() -> None:
    # 100 requests per 6 s is ten times 100 a minute: the largest partition takes a tenth of the time, and
    # a tick of 30 s holds 500 requests instead of 50.
    horizon_s = horizon_for(100, 30, largest_partition=300, window_s=6)
    assert horizon_s == pytest.approx(30 + 18)
    budget = Budget(100, horizon_s, backoff_level=0, in_flight=120, reserve=40, window_s=6)
    assert budget.capacity == pytest.approx(500 + 300)
    assert budget.available == pytest.approx(800 - 120 - 40)
    assert "at 100 per 6 s," in budget.describe()
    recorded = samples("kalshi", [30]) + samples("polymarket", [20], first_id=2)
    plan = plan_tick(settings(rate_window_s=6.0), NOON, SensorCursor(), recorded, set(), [], Counter())
    assert plan.budget.horizon_s == pytest.approx(60 + 6 * 150 / 100)
    assert plan.budget.available == pytest.approx(100 * 60 / 6 + 150)


def settings(**changes: object) -> Settings:
    """Settings whose automation part is a ten-day window and a tick a minute, `changes` made to either part; the
    partitions start where tests/conftest.py has them start."""
    automation = {name: value for name, value in changes.items() if name in AutomationSettings.__dataclass_fields__}
    base = AutomationSettings(lookback_days=2, backfill_start=YESTERDAY - timedelta(days=9), backfill_interval_s=60)
    return Settings(**{"rate_limit_per_min": 100, "start_date": date(2025, 1, 1),
                       **{name: value for name, value in changes.items() if name not in automation}},
                    automation=AutomationSettings(**{**base.__dict__, **automation}))


def test_new_429s_halve_the_budget_and_clean_ticks_restore_it() -> None:
    quiet = samples("kalshi", [30]) + samples("polymarket", [20], first_id=2)
    limited = quiet + samples("kalshi", [30], rate_limited=4, first_id=3)
    args = (set(), [], Counter())
    backing_off = plan_tick(settings(), NOON, SensorCursor(), limited, *args)
    assert backing_off.cursor.backoff_level == 1
    assert backing_off.budget.available == pytest.approx(250 / 2)
    assert "halved 1x after 429s" in backing_off.summary()
    # The same materialisations on the next tick are not new: the back-off eases off.
    recovered = plan_tick(settings(), NOON, backing_off.cursor, limited, *args)
    assert (recovered.cursor.backoff_level, recovered.budget.available) == (0, pytest.approx(250))


def test_the_daily_runs_are_reserved_when_the_schedule_is_about_to_tick() -> None:
    just_before = datetime.combine(TODAY, DAILY_AT, UTC) - timedelta(minutes=2)
    recorded = samples("kalshi", [30]) + samples("polymarket", [20], first_id=2)
    ten_minutes = settings(backfill_interval_s=600)  # a horizon of 690 s: the 00:30 tick falls inside
    plan = plan_tick(ten_minutes, just_before, SensorCursor(), recorded, set(), [], Counter())
    assert plan.budget.reserve == 3 * (100 + 150)  # yesterday and two days of look-back, both platforms
    assert plan.budget.available == pytest.approx(1000 + 150 - 750)
    # The schedule's days are left to it; the sensor goes on with older ones.
    four, five = YESTERDAY - timedelta(days=3), YESTERDAY - timedelta(days=4)
    assert partitions_of(plan.requests) == [
        PartitionRef(four, "polymarket"),
        PartitionRef(four, "kalshi"),
        PartitionRef(five, "polymarket"),
    ]
    later = plan_tick(ten_minutes, NOON, SensorCursor(), recorded, set(), [], Counter())
    assert later.budget.reserve == 0
    assert partitions_of(later.requests)[0] == PartitionRef(YESTERDAY, "polymarket")


def test_just_after_the_tick_the_schedules_days_stay_its_own_until_its_runs_are_queued() -> None:
    """A tick of the sensor between the schedule's tick and the queueing of its runs must not ask for them too."""
    just_after = datetime.combine(TODAY, DAILY_AT, UTC) + timedelta(seconds=2)
    recorded = samples("kalshi", [30]) + samples("polymarket", [20], first_id=2)
    ten_minutes = settings(backfill_interval_s=600)
    plan = plan_tick(ten_minutes, just_after, SensorCursor(), recorded, set(), [], Counter())
    assert plan.budget.reserve == 3 * (100 + 150)
    assert partitions_of(plan.requests)[0] == PartitionRef(YESTERDAY - timedelta(days=3), "polymarket")
    queued = [InFlight(ref, frozenset(ASSET_NAMES)) for n in range(3) for ref in
              (PartitionRef(YESTERDAY - timedelta(days=n), "polymarket"), PartitionRef(YESTERDAY - timedelta(days=n),
                                                                                     "kalshi"))]
    once_queued = plan_tick(ten_minutes, just_after, SensorCursor(), recorded, set(), queued, Counter())
    assert once_queued.budget.reserve == 0 and once_queued.budget.in_flight == 3 * (100 + 150)  # counted once


def test_the_schedules_days_stay_its_own_for_a_grace_after_its_tick_then_the_sensor_fills_them() -> None:
    """A daemon slower than the horizon to queue the tick's runs (a loaded host) must not see them pulled twice; a
    schedule switched off leaves them to the sensor once the grace has passed; landed days reserve nothing."""
    recorded = samples("kalshi", [30]) + samples("polymarket", [20], first_id=2)
    tick = datetime.combine(TODAY, DAILY_AT, UTC)
    short = settings(backfill_interval_s=5)  # a horizon of well under a minute
    slow_daemon = plan_tick(short, tick + timedelta(minutes=3), SensorCursor(), recorded, set(), [], Counter())
    assert slow_daemon.budget.horizon_s < 180 < SCHEDULE_GRACE_S
    assert YESTERDAY not in {ref.day for ref in partitions_of(slow_daemon.requests)}
    assert slow_daemon.budget.reserve == 3 * (100 + 150)
    landed = {PartitionRef(YESTERDAY - timedelta(days=n), p) for n in range(3) for p in PLATFORMS}
    after_landing = plan_tick(short, tick + timedelta(minutes=3), SensorCursor(), recorded, landed, [], Counter())
    assert after_landing.budget.reserve == 0
    switched_off = tick + timedelta(seconds=SCHEDULE_GRACE_S + 60)
    later = plan_tick(short, switched_off, SensorCursor(), recorded, set(), [], Counter())
    assert later.budget.reserve == 0
    assert partitions_of(later.requests)[0] == PartitionRef(YESTERDAY, "polymarket")


def test_a_started_run_is_charged_only_for_the_assets_it_has_not_landed() -> None:
    recorded = samples("kalshi", [30]) + samples("polymarket", [20], first_id=2)
    running = InFlight(PartitionRef(YESTERDAY, "kalshi"), frozenset({"trades", "price_history"}))
    plan = plan_tick(settings(), NOON, SensorCursor(), recorded, set(), [running], Counter())
    assert plan.budget.in_flight == 60
    assert PartitionRef(YESTERDAY, "kalshi") not in partitions_of(plan.requests)


# -- freshness ---------------------------------------------------------------------------------------


def test_the_freshness_checks_flag_a_platform_whose_yesterday_is_missing(
    automation_env: None, instance: dg.DagsterInstance
) -> None:
    land(instance, PartitionRef(YESTERDAY, "polymarket"))
    land(instance, PartitionRef(YESTERDAY - timedelta(days=1), "kalshi"))
    job = build_definitions(from_env()).resolve_job_def("freshness_checks")
    evaluations = job.execute_in_process(instance=instance).get_asset_check_evaluations()
    assert {e.asset_key.to_user_string() for e in evaluations} == set(ASSET_NAMES)
    for evaluation in evaluations:
        assert evaluation.check_name == "yesterday_landed" and not evaluation.passed
        assert evaluation.metadata["missing_platforms"].value == ["kalshi"]
    land(instance, PartitionRef(YESTERDAY, "kalshi"))
    assert all(e.passed for e in job.execute_in_process(instance=instance).get_asset_check_evaluations())


def lose_files(ref: PartitionRef) -> Lake:
    """What a bad disk or a wrong `rm` does to a landed partition: its trades file gone, its markets file emptied."""
    lake = Lake(Path(os.environ["PMW_DATA_DIR"]) / "lake")
    lake.partition_path("trades", ref.platform, ref.day).unlink()
    lake.partition_path("markets", ref.platform, ref.day).write_bytes(b"")
    return lake


def test_the_freshness_checks_trust_a_record_only_when_its_file_is_there_and_reads(
    automation_env: None, instance: dg.DagsterInstance
) -> None:
    for platform in PLATFORMS:
        land(instance, PartitionRef(YESTERDAY, platform))
    lose_files(PartitionRef(YESTERDAY, "kalshi"))
    job = build_definitions(from_env()).resolve_job_def("freshness_checks")
    evaluations = {e.asset_key.to_user_string(): e for e in job.execute_in_process(instance=instance)
                   .get_asset_check_evaluations()}
    assert {name for name, e in evaluations.items() if not e.passed} == {"trades", "markets"}
    for name in ("trades", "markets"):
        assert evaluations[name].metadata["missing_platforms"].value == ["kalshi"]
        assert "kalshi" in (evaluations[name].description or "") and "unreadable" in (
            evaluations[name].description or "")


def test_the_freshness_checks_notice_a_smaller_valid_file_put_in_place_of_a_landed_partition(
    automation_env: None, instance: dg.DagsterInstance
) -> None:
    for platform in PLATFORMS:
        land(instance, PartitionRef(YESTERDAY, platform))
    lake = Lake(Path(os.environ["PMW_DATA_DIR"]) / "lake")
    landed = lake.row_count("trades", "kalshi", YESTERDAY)
    for table, keep in (("trades", 0), ("markets", 1)):  # a valid 0-row file, and a valid one cut short
        path = lake.partition_path(table, "kalshi", YESTERDAY)
        pl.read_parquet(path).head(keep).write_parquet(path)
    evaluations = {name: freshness_result(instance, lake, dg.AssetKey(name), YESTERDAY, PLATFORMS)
                   for name in ASSET_NAMES}
    assert {name for name, e in evaluations.items() if not e.passed} == {"trades", "markets"}
    assert evaluations["trades"].metadata["missing_platforms"].value == ["kalshi"]
    assert (f"{YESTERDAY} landed for kalshi, but its file is not the one the pipeline landed: it holds 0 rows where "
            f"{landed} were landed") in (evaluations["trades"].description or "")


def test_the_freshness_checks_take_a_restored_version_as_landed(
    automation_env: None, instance: dg.DagsterInstance
) -> None:
    for platform in PLATFORMS:
        land(instance, PartitionRef(YESTERDAY, platform))
    lake = Lake(Path(os.environ["PMW_DATA_DIR"]) / "lake", keep_versions=3)
    again = lake.write_partition("trades", "kalshi", YESTERDAY, sample_frame("trades", "kalshi", YESTERDAY, 5))
    instance.report_runless_asset_event(dg.AssetMaterialization(
        "trades", partition=str(PartitionRef(YESTERDAY, "kalshi").key),
        metadata={"dagster/row_count": again.rows, "checksum": again.checksum}))
    lake.restore("trades", "kalshi", YESTERDAY)  # the first landing's file, back in place
    assert lake.row_count("trades", "kalshi", YESTERDAY) == 3
    assert freshness_result(instance, lake, dg.AssetKey("trades"), YESTERDAY, PLATFORMS, landings_held=4).passed
    assert not freshness_result(instance, lake, dg.AssetKey("trades"), YESTERDAY, PLATFORMS, landings_held=1).passed


def test_the_sensor_refills_a_landed_partition_whose_files_are_gone_or_unreadable(
    automation_env: None, instance: dg.DagsterInstance, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PMW_BACKFILL_START", (YESTERDAY - timedelta(days=1)).isoformat())  # a two-day window
    window = window_refs(2)
    for ref in window:
        land(instance, ref)
    lost = window[1]
    first = evaluate(dg.build_sensor_context(instance=instance), from_env(), now=NOON)
    assert not first.run_requests  # all whole: nothing to ask for
    lose_files(lost)
    second = evaluate(dg.build_sensor_context(instance=instance), from_env(), now=NOON)
    assert lost in partitions_of(second.run_requests)
    [request] = [r for r in second.run_requests if PartitionRef.parse(str(r.partition_key)) == lost]
    assert request.run_key != run_key(lost, 0)  # the first fill's key: Dagster would skip a request under it
    assert SensorCursor(**json.loads(second.cursor)).landed == len(window) - 1


# -- definitions, dagster.yaml and settings ----------------------------------------------------------


def test_the_code_location_holds_the_schedules_sensors_checks_and_retrying_job() -> None:
    repo = defs.get_repository_def()
    assert {s.name for s in repo.schedule_defs} == {"daily_ingestion", "daily_freshness_checks", "orderbook_rounds",
                                                    "daily_traders", "daily_sports", "daily_lake_scrub",
                                                    "run_retention"}
    assert sorted(s.name for s in repo.sensor_defs) == ["backfill_sensor", "sql_models_after_ingestion"]
    job = repo.get_job("ingestion")
    assert job.op_retry_policy == STEP_RETRY_POLICY
    assert job.executor_def.name == "in_process"
    checks = {key.name for key in job.asset_layer.asset_graph.asset_check_keys}
    assert "yesterday_landed" not in checks and "unique_key" in checks  # freshness runs on its own
    assert {k.name for k in repo.get_job("freshness_checks").asset_layer.asset_graph.asset_check_keys} >= {
        "yesterday_landed"
    }
    for name in ("orderbook_snapshots", "watched_traders"):  # the watch lists' jobs retry like the ingestion's
        assert repo.get_job(name).op_retry_policy == STEP_RETRY_POLICY
        assert repo.get_job(name).executor_def.name == "in_process"


def test_dagster_yaml_gives_every_api_pool_its_limit_and_turns_on_run_monitoring(tmp_path: Path) -> None:
    overrides = yaml.safe_load((REPO / "pipeline" / "defs" / "dagster.yaml").read_text())
    with dg.instance_for_test(overrides=overrides, temp_dir=str(tmp_path)) as instance:
        pool_config = instance.get_concurrency_config().pool_config
        assert (pool_config.pool_granularity.value, pool_config.default_pool_limit) == ("run", 1)
        register_api_pools(instance)
        for pool in API_POOLS:
            assert instance.event_log_storage.get_concurrency_info(pool).slot_count == 1
        assert instance.run_monitoring_enabled
        assert instance.run_monitoring_settings["free_slots_after_run_end_seconds"] > 0
        assert instance.run_monitoring_max_runtime_seconds > 0
        assert type(instance.run_coordinator).__name__ == "QueuedRunCoordinator"
        assert not instance.telemetry_enabled  # no banner in the middle of `pmw demo`


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"PMW_LOOKBACK_DAYS": "-1"}, "PMW_LOOKBACK_DAYS must be at least 0, got -1"),
        ({"PMW_START_DATE": "2025-01-01", "PMW_BACKFILL_START": "2024-12-31"},
         "PMW_BACKFILL_START must not be before PMW_START_DATE (2025-01-01)"),
        ({"PMW_BACKFILL_START": "yesterday"}, "PMW_BACKFILL_START must be a day as YYYY-MM-DD, got 'yesterday'"),
        ({"PMW_BACKFILL_ORDER": "random"}, "PMW_BACKFILL_ORDER must be one of newest_first, oldest_first"),
        ({"PMW_BACKFILL_INTERVAL_S": "0"}, "PMW_BACKFILL_INTERVAL_S must be at least 1, got 0"),
        ({"PMW_DAILY_AT": "0:30:00"}, "PMW_DAILY_AT must be a time of day as HH:MM (UTC), got '0:30:00'"),
        ({"PMW_DAILY_AT": "24:00"}, "PMW_DAILY_AT must be a time of day as HH:MM (UTC), got '24:00'"),
        ({"PMW_MARTS_INTERVAL_S": "0"}, "PMW_MARTS_INTERVAL_S must be at least 1, got 0"),
    ],
)
def test_bad_automation_settings_name_the_variable_and_value(env: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError) as error:
        Settings.from_env(env, credentials=False)
    assert message in str(error.value)


def test_automation_settings_defaults() -> None:
    """The sensor fills the sandbox world's seven days by default, not a history of empty partitions."""
    defaults = Settings.from_env({}, credentials=False)
    assert defaults.automation == AutomationSettings(
        lookback_days=2,
        backfill_order=BackfillOrder.NEWEST_FIRST,
        backfill_interval_s=60,
    )
    assert defaults.backfill_start == TODAY - timedelta(days=7) and defaults.rate_limit_per_min == 100


@pytest.mark.parametrize(
    ("env", "first"),
    [
        ({}, TODAY - timedelta(days=7)),  # the sandbox world: the seven days up to yesterday
        ({"PMW_SANDBOX_END": "2026-11-21", "PMW_SANDBOX_DAYS": "30"}, date(2026, 10, 23)),
        ({"PMW_SOURCE": "direct", "PMW_DIRECT_URL": "sandbox", "PMW_SANDBOX_END": "2026-11-21"}, date(2026, 11, 15)),
        ({"PMW_SOURCE": "direct"}, date(2025, 1, 1)),  # a real API: its history
        ({"PMW_SOURCE": "api"}, date(2025, 1, 1)),
        ({"PMW_START_DATE": "2026-03-01", "PMW_SANDBOX_END": "2026-11-21"}, date(2026, 3, 1)),
    ],
)
def test_the_partitions_start_where_the_data_starts_unless_set(env: dict[str, str], first: date) -> None:
    assert Settings.from_env(env, credentials=False).first_day == first
