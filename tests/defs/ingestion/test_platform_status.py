"""What the service says about itself: `/health` and `/platforms` observed into `platform_status`, and a platform that
`/platforms` reports unavailable held by the daily schedule, the backfill sensor and `pmw backfill`.

The sandbox's `unavailable=` fault lists a platform as `unavailable` (health `fail`) while its data endpoints still
answer: what holds the runs is the service's word, not a failure."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, time, timedelta
from pathlib import Path

import dagster as dg
import polars as pl
import pytest

from pipeline.cli.backfill import partitions as backfill
from pipeline.cli.main import main
from pipeline.defs.automation.holds import Holds, platform_holds
from pipeline.defs.automation.schedule import daily_ingestion_schedule
from pipeline.defs.automation.sensor import evaluate
from pipeline.engine.config import Settings
from pipeline.engine.lake.store import Lake
from pipeline.engine.normalize.platform_status import status_rows
from pipeline.engine.raw_pages import Answered, ServiceStatus
from pipeline.engine.schema import PLATFORM_STATUS, Source
from pmw_sandbox import Faults
from pmw_sandbox.readings import CHOICES
from tests.support.runs import DAY

HELD_LINE = "the service's /platforms reports status 'unavailable', health 'fail'"
TICK = datetime.combine(DAY + timedelta(days=1), time(0, 30), UTC)  # the daily tick that asks for DAY


@pytest.fixture
def instance() -> Iterator[dg.DagsterInstance]:
    with dg.instance_for_test() as instance:
        yield instance


def _unavailable(monkeypatch: pytest.MonkeyPatch, platforms: str) -> None:
    monkeypatch.setenv("PMW_SANDBOX_FAULTS", f"unavailable={platforms}")


def _observations(data_dir: Path, platform: str) -> pl.DataFrame:
    lake = Lake(data_dir / "lake")
    days = [day for p, day in lake.partitions(PLATFORM_STATUS.name) if p == platform]
    frames = [lake.read_partition(PLATFORM_STATUS.name, platform, day) for day in days]
    return pl.concat([f for f in frames if f is not None], how="vertical") if frames else pl.DataFrame()


def _platforms_of(requests: list[dg.RunRequest]) -> set[str]:
    return {str(r.partition_key).split("|")[1] for r in requests}


# -- the rows and the hold rule ----------------------------------------------------------------------


def _status(items: list[object], health: object = None) -> ServiceStatus:
    return ServiceStatus(datetime(2026, 11, 21, 12, tzinfo=UTC), Answered(body={"platforms": items}),
                         Answered(body={"data": health}) if health is not None else Answered(error="GET /health: 503"))


def test_a_platform_is_held_only_when_listed_with_a_status_that_does_not_serve() -> None:
    rows = status_rows(_status([
        {"id": "polymarket", "status": "Maintenance", "health": {"status": "fail", "last_check": "nonsense"}},
        {"id": "kalshi", "status": "degraded"},
    ]), ["polymarket", "kalshi", "limitless"], "api")
    by_platform = {row["platform"]: row for row in rows.iter_rows(named=True)}
    assert by_platform["polymarket"]["held"] and not by_platform["kalshi"]["held"]
    assert not by_platform["limitless"]["listed"] and not by_platform["limitless"]["held"]  # not listed: no hold
    assert "health.last_check is not an ISO-8601 time" in by_platform["polymarket"]["error"]
    assert all("GET /health: 503" in row["error"] for row in by_platform.values())  # said, not a failure
    assert rows.schema == PLATFORM_STATUS.polars_schema
    assert rows["date"].to_list() == [DAY] * 3 and rows["observed_at"].dt.date().to_list() == [DAY] * 3


def test_an_item_of_the_wrong_types_is_listed_with_its_reason_and_holds_nothing() -> None:
    [row] = status_rows(_status([{"id": "kalshi", "status": 3}], {"status": "healthy", "version": "2.0.0"}),
                        ["kalshi"], "api").iter_rows(named=True)
    assert row["listed"] and not row["held"] and row["service_version"] == "2.0.0"
    assert row["error"] == "GET /platforms: field 'status': expected a string, got int 3"


def test_the_fault_names_known_platforms_only() -> None:
    assert Faults.parse("unavailable=kalshi+polymarket").unavailable_platforms == {"kalshi", "polymarket"}
    with pytest.raises(ValueError, match="unknown platform"):
        Faults.parse("unavailable=kalshy")


@pytest.mark.parametrize("word", CHOICES["unavailable_status"])
def test_a_platform_is_held_whatever_word_the_service_gives_its_unavailability(
        word: str, pipeline_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _unavailable(monkeypatch, "kalshi")
    monkeypatch.setenv("PMW_SANDBOX_READINGS", f"unavailable_status={word}")
    holds = platform_holds(["polymarket", "kalshi"], Settings.from_env())
    assert holds.held == {"kalshi": f"the service's /platforms reports status {word!r}, health 'fail' "
                                    f"(last check {DAY + timedelta(days=1)}T00:00:00Z)"}
    assert sum(holds.requests.values()) == 2  # /platforms and /health, once each
    [row] = _observations(pipeline_env, "kalshi").iter_rows(named=True)
    assert row["status"] == word and row["held"]


def test_the_platforms_own_apis_have_no_platforms_to_ask() -> None:
    direct = Settings(source=Source.DIRECT, direct_url="http://127.0.0.1:9")  # nothing listens: nothing is asked
    assert platform_holds(["kalshi"], direct) == Holds()


# -- the holds -----------------------------------------------------------------------------------------


def test_the_daily_tick_holds_a_platform_the_service_reports_unavailable(
        pipeline_env: Path, monkeypatch: pytest.MonkeyPatch, instance: dg.DagsterInstance) -> None:
    _unavailable(monkeypatch, "kalshi")
    tick = dg.build_schedule_context(instance=instance, scheduled_execution_time=TICK)
    requests = daily_ingestion_schedule(Settings.from_env())(tick)
    assert isinstance(requests, list) and requests and _platforms_of(requests) == {"polymarket"}
    [held] = _observations(pipeline_env, "kalshi").iter_rows(named=True)  # the observation that held it
    assert held["held"] and held["status"] == "unavailable" and held["service_status"] == "degraded"

    _unavailable(monkeypatch, "kalshi+polymarket")
    skipped = daily_ingestion_schedule(Settings.from_env())(
        dg.build_schedule_context(instance=instance, scheduled_execution_time=TICK))
    assert isinstance(skipped, dg.SkipReason)
    assert f"held kalshi: {HELD_LINE}" in str(skipped.skip_message)
    assert f"held polymarket: {HELD_LINE}" in str(skipped.skip_message)
    assert _observations(pipeline_env, "kalshi").height == 1  # the same state again: not landed twice


def test_the_backfill_sensor_holds_a_platform_the_service_reports_unavailable(
        pipeline_env: Path, monkeypatch: pytest.MonkeyPatch, instance: dg.DagsterInstance) -> None:
    monkeypatch.setenv("PMW_BACKFILL_START", (DAY - timedelta(days=2)).isoformat())
    monkeypatch.setenv("PMW_RATE_LIMIT_PER_MIN", "100000")  # a budget for every partition of the window
    noon = datetime.combine(datetime.now(UTC).date(), time(12), UTC)
    asked = evaluate(dg.build_sensor_context(instance=instance), Settings.from_env(), now=noon)
    assert _platforms_of(list(asked.run_requests or [])) == {"polymarket", "kalshi"}

    _unavailable(monkeypatch, "kalshi")
    result = evaluate(dg.build_sensor_context(instance=instance), Settings.from_env(), now=noon)
    assert result.run_requests and _platforms_of(list(result.run_requests)) == {"polymarket"}

    _unavailable(monkeypatch, "kalshi+polymarket")
    skipped = evaluate(dg.build_sensor_context(instance=instance), Settings.from_env(), now=noon)
    assert not skipped.run_requests and skipped.skip_reason is not None
    assert f"held kalshi: {HELD_LINE}" in str(skipped.skip_reason.skip_message)


def test_pmw_backfill_holds_the_platform_in_one_line_exits_1_and_lands_the_other(
        pipeline_env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        instance: dg.DagsterInstance) -> None:
    monkeypatch.setattr(backfill, "pmw_instance", lambda data_dir: instance)
    _unavailable(monkeypatch, "kalshi")
    capsys.readouterr()
    code = main(["backfill", "--platform", "polymarket,kalshi", "--start", DAY.isoformat(), "--assets", "markets",
                 "--no-models"])
    lines = capsys.readouterr().out.splitlines()
    assert code == 1, lines
    kalshi = [line for line in lines if "kalshi" in line]
    assert kalshi == [f"HELD PLATFORM kalshi: {HELD_LINE} (last check {DAY + timedelta(days=1)}T00:00:00Z); "
                      "none of its 1 partition(s) was run"], lines
    assert lines[1].startswith(f"[1/1] polymarket {DAY}: markets "), lines
    lake = Lake(pipeline_env / "lake")
    assert lake.read_partition("markets", "polymarket", DAY) is not None
    assert lake.read_partition("markets", "kalshi", DAY) is None
    [polymarket] = _observations(pipeline_env, "polymarket").iter_rows(named=True)  # landed by its run
    assert polymarket["status"] == "available" and not polymarket["held"] and polymarket["error"] is None
    assert polymarket["service_status"] == "degraded" and polymarket["service_version"] == "2.0.0"
    assert {e["name"] for e in polymarket["endpoints"]} >= {"markets", "trades"}
    [kalshi_row] = _observations(pipeline_env, "kalshi").iter_rows(named=True)  # landed by the hold
    assert kalshi_row["held"] and kalshi_row["health_status"] == "fail"
    statuses = instance.fetch_materializations(dg.AssetKey("platform_status"), limit=5).records
    assert [r.partition_key for r in statuses] == [f"{DAY}|polymarket"]
