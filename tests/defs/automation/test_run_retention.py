"""The run retention: finished runs older than the limit deleted with their files, each partition's newest
materialisation recorded again so what landed stays landed, and queued runs left alone. The year's bound is
the `retention` benchmark's (python -m benchmarks --only retention)."""

from pathlib import Path

import dagster as dg
import pytest

from pipeline.defs.automation.run_retention import prune_runs, run_retention_schedule
from pipeline.engine.config import ConfigError, Settings

DAYS = dg.DailyPartitionsDefinition(start_date="2026-11-01")


@dg.asset(partitions_def=DAYS)
def nightly(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
    return dg.MaterializeResult(metadata={"rows": len(context.run.run_id), "rate_limited_answers": 1})


def _night(instance: dg.DagsterInstance, day: str) -> dg.RunRecord:
    dg.materialize([nightly], partition_key=day, instance=instance)
    return instance.get_run_records(limit=1)[0]


def test_old_runs_go_with_their_files_and_every_partition_stays_landed(tmp_path: Path) -> None:
    with dg.instance_for_test(temp_dir=str(tmp_path)) as instance:
        first = _night(instance, "2026-11-01")
        rerun = _night(instance, "2026-11-01")  # the look-back lands the day again: the first run's is superseded
        running = dg.DagsterRun(job_name="__ephemeral_asset_job__", status=dg.DagsterRunStatus.STARTED)
        instance.add_run(running)
        last = _night(instance, "2026-11-02")
        old = [first.dagster_run.run_id, rerun.dagster_run.run_id]
        assert all((tmp_path / "history" / "runs" / f"{run}.db").exists() for run in old)
        assert all((tmp_path / "storage" / run).exists() for run in old)

        pruned = prune_runs(instance, last.create_timestamp)

        assert instance.get_materialized_partitions(nightly.key) == {"2026-11-01", "2026-11-02"}
        assert (pruned.runs, pruned.carried) == (2, 1)
        assert {r.dagster_run.run_id for r in instance.get_run_records()} == {running.run_id, last.dagster_run.run_id}
        assert not any((tmp_path / "history" / "runs" / f"{run}.db").exists() for run in old)
        assert not any((tmp_path / "storage" / run).exists() for run in old)
        [kept] = instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=nightly.key, asset_partitions=["2026-11-01"]), limit=5).records
        assert kept.asset_materialization is not None
        assert kept.asset_materialization.metadata["rows"] == dg.IntMetadataValue(len(rerun.dagster_run.run_id))
        assert "rate_limited_answers" not in kept.asset_materialization.metadata  # no fresh 429 for the sensor
        assert prune_runs(instance, last.create_timestamp) == type(pruned)(0, 0)  # a carried record has no run


def test_the_retention_is_a_setting_runs_daily_and_zero_keeps_every_run(monkeypatch: pytest.MonkeyPatch) -> None:
    assert Settings.from_env({}).automation.run_retention_days == 30
    assert Settings.from_env({"PMW_RUN_RETENTION_DAYS": "0"}).automation.run_retention_days == 0
    with pytest.raises(ConfigError, match="PMW_RUN_RETENTION_DAYS must be at least 0, got -1"):
        Settings.from_env({"PMW_RUN_RETENTION_DAYS": "-1"})
    schedule = run_retention_schedule(Settings())
    assert schedule.default_status == dg.DefaultScheduleStatus.RUNNING and schedule.cron_schedule == "30 0 * * *"
