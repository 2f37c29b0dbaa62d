"""The sensor that rebuilds the SQL models after ingestion: what it decides, and what it reads of an instance."""

from __future__ import annotations

import time
import uuid

import dagster as dg
import pytest

from pipeline.definitions import defs
from pipeline.defs.common.tags import TRIGGER_TAG
from pipeline.defs.links.assets import MARKET_LINKS_KEY
from pipeline.defs.sql_models.assets import load_sql_assets
from pipeline.defs.sql_models.rebuild_sensor import SENSOR_NAME, Observed, decide, observe
from pipeline.engine.config import Settings
from tests.support.runs import CODE_LOCATION

TRADES = dg.AssetKey("trades")
MARTS = [dg.AssetKey(["marts", "platform_daily"]), dg.AssetKey(["staging", "stg_trades"])]


@pytest.mark.parametrize(
    ("observed", "skip"),
    [
        (Observed(newest_landed=None, oldest_build=None, ingesting=0), "nothing has landed yet"),
        (Observed(newest_landed=7, oldest_build=9, ingesting=0), "the models are newer than everything"),
        (Observed(newest_landed=9, oldest_build=7, ingesting=2), "waiting: 2 run(s) or backfill(s)"),
        (Observed(newest_landed=9, oldest_build=None, ingesting=1), "waiting: 1 run(s)"),
        (Observed(newest_landed=9, oldest_build=3, ingesting=0, quiet_s=30, fed_by_backfill_sensor=True),
         "landed 30 s ago"),
    ],
)
def test_the_sensor_waits_for_news_and_for_quiet(observed: Observed, skip: str) -> None:
    decision = decide(observed, settle_s=120)
    assert isinstance(decision, dg.SkipReason) and skip in (decision.skip_message or "")


@pytest.mark.parametrize("oldest_build", [None, 3])
def test_new_rows_and_quiet_ask_for_one_rebuild_keyed_by_what_landed(oldest_build: int | None) -> None:
    decision = decide(Observed(newest_landed=9, oldest_build=oldest_build, ingesting=0, quiet_s=121), settle_s=120)
    assert isinstance(decision, dg.RunRequest)
    assert decision.run_key == "after_ingestion:9"  # the same landed state is never rebuilt twice


def test_what_the_backfill_sensor_did_not_land_is_rebuilt_without_waiting_for_its_ticks() -> None:
    """The backfill sensor is off unless switched on: a landing of the schedule, `pmw backfill` or the UI is
    rebuilt as soon as nothing more is landing, not two ticks of a sensor that may not run."""
    decision = decide(Observed(newest_landed=9, oldest_build=3, ingesting=0, quiet_s=1), settle_s=120)
    assert isinstance(decision, dg.RunRequest)


def test_the_newest_landing_is_known_to_come_from_the_backfill_sensor_by_its_runs_tag() -> None:
    @dg.asset(key=TRADES)
    def trades() -> None:
        """A stand-in for the ingestion table: what matters is the run that records its materialisation."""

    with dg.DagsterInstance.ephemeral() as instance:
        for trigger in ("daily", "backfill_sensor"):
            assert dg.materialize([trades], instance=instance, tags={TRIGGER_TAG: trigger}).success
            assert observe(instance, [TRADES], MARTS, time.time()).fed_by_backfill_sensor == (
                trigger == "backfill_sensor")
        instance.report_runless_asset_event(dg.AssetMaterialization(TRADES))  # reported by no run
        assert not observe(instance, [TRADES], MARTS, time.time()).fed_by_backfill_sensor


def test_it_reads_the_newest_landing_the_oldest_build_and_the_runs_under_way() -> None:
    with dg.DagsterInstance.ephemeral() as instance:
        assert observe(instance, [TRADES], MARTS, time.time()) == Observed(None, None, 0)
        instance.report_runless_asset_event(dg.AssetMaterialization(MARTS[0]))
        instance.report_runless_asset_event(dg.AssetMaterialization(MARTS[1]))
        instance.report_runless_asset_event(dg.AssetMaterialization(TRADES, partition="2026-11-20|kalshi"))
        seen = observe(instance, [TRADES], MARTS, time.time() + 60)
        assert seen.newest_landed is not None and seen.oldest_build is not None
        assert seen.newest_landed > seen.oldest_build and seen.ingesting == 0
        assert 60 <= seen.quiet_s < 70
        for job, status, selection in [
            ("ingestion", dg.DagsterRunStatus.SUCCESS, None),  # done
            ("ingestion", dg.DagsterRunStatus.QUEUED, None),
            ("__ASSET_JOB", dg.DagsterRunStatus.STARTED, {TRADES}),  # a backfill from the UI, say
            ("__ASSET_JOB", dg.DagsterRunStatus.STARTED, {MARTS[0]}),  # a build of the models: lands no table
        ]:
            instance.add_run(
                dg.DagsterRun(job_name=job, run_id=str(uuid.uuid4()), status=status, asset_selection=selection,
                              remote_job_origin=CODE_LOCATION.get_job_origin(job))
            )
        assert observe(instance, [TRADES], MARTS, time.time()).ingesting == 2


def test_the_code_location_rebuilds_every_model_with_the_sensor_on_from_the_start() -> None:
    repository = defs.get_repository_def()
    sensor = repository.get_sensor_def(SENSOR_NAME)
    models = {key for asset in load_sql_assets(Settings.from_env(credentials=False)) for key in asset.keys}
    # links/market_links is landed in the same run, before the models that read it (marts.cross_platform_daily)
    assert repository.get_job(sensor.job_name).asset_layer.selected_asset_keys == models | {MARKET_LINKS_KEY}
    assert sensor.default_status == dg.DefaultSensorStatus.RUNNING
