"""The scheduled scrub in Dagster: its run fails on a bad file, naming it and `pmw restore`; its schedule ticks
daily at PMW_SCRUB_AT, on unless PMW_SCRUB=0."""

from __future__ import annotations

from datetime import time
from pathlib import Path

import dagster as dg
import pytest

from pipeline.defs.automation.lake_scrub import SCRUB_JOB, SCRUB_OP, SCRUB_SCHEDULE, lake_scrub_job, lake_scrub_schedule
from pipeline.defs.common.resources import PipelineResource
from pipeline.defs.location import build_definitions
from pipeline.engine.config import ConfigError, Settings
from pipeline.engine.lake.store import Lake
from tests.support.frames import DAY, trades_frame


def settings_of(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, **env: str) -> Settings:
    monkeypatch.setenv("PMW_DATA_DIR", str(tmp_path / "data"))
    for name in ("PMW_SCRUB", "PMW_SCRUB_AT", "PMW_SCRUB_WHOLE_EVERY_DAYS"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return Settings.from_env(credentials=False)


def test_the_scrub_fails_on_a_bad_file_naming_it_and_what_to_do(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    settings = settings_of(monkeypatch, tmp_path)
    lake = Lake.of(settings)
    for platform in ("kalshi", "polymarket"):
        lake.write_partition("trades", platform, DAY, trades_frame(platform, DAY, 200))
    bad = lake.partition_path("trades", "kalshi", DAY)
    flipped = bytearray(bad.read_bytes())
    flipped[len(flipped) // 3] ^= 0xFF
    bad.write_bytes(flipped)
    scrub_op = lake_scrub_job().graph.node_named(SCRUB_OP).definition
    with dg.build_op_context(resources={"pipeline": PipelineResource()}) as context, pytest.raises(
            dg.Failure) as failed:  # the op invoked alone: a run of its job takes seconds
        scrub_op(context)
    error = failed.value
    assert str(bad) in (error.description or "") and "pmw restore" in (error.description or "")
    [said] = error.metadata["bad_files"].value
    assert said.startswith(f"{bad}: ")
    assert f"pmw restore --table trades --platform kalshi --date {DAY}" in said
    assert error.metadata["files_read"].value == 2


def test_the_schedule_ticks_daily_at_its_time_and_is_switched_by_its_setting(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    default = lake_scrub_schedule(settings_of(monkeypatch, tmp_path))
    assert (default.name, default.cron_schedule, default.default_status) == (
        SCRUB_SCHEDULE, "0 3 * * *", dg.DefaultScheduleStatus.RUNNING)
    moved = settings_of(monkeypatch, tmp_path, PMW_SCRUB="0", PMW_SCRUB_AT="04:15", PMW_SCRUB_WHOLE_EVERY_DAYS="30")
    assert (moved.automation.scrub_at, moved.automation.scrub_whole_every_days) == (time(4, 15), 30)
    schedule = lake_scrub_schedule(moved)
    assert (schedule.cron_schedule, schedule.default_status) == ("15 4 * * *", dg.DefaultScheduleStatus.STOPPED)
    with pytest.raises(ConfigError, match="PMW_SCRUB must be 1 or 0"):
        settings_of(monkeypatch, tmp_path, PMW_SCRUB="sometimes")


def test_the_location_runs_the_scrub_on_its_schedule() -> None:
    location = build_definitions(Settings())
    schedule = location.resolve_schedule_def(SCRUB_SCHEDULE)
    assert schedule.job_name == SCRUB_JOB
    assert [node.name for node in location.resolve_job_def(SCRUB_JOB).nodes] == [SCRUB_OP]
