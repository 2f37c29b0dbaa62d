"""The five ingestion assets against the in-process sandbox."""

from __future__ import annotations

from datetime import UTC, datetime, time
from pathlib import Path

import dagster as dg
import pytest
from polars.testing import assert_frame_equal

from pipeline.definitions import defs
from pipeline.engine.checks import CHECKS
from pipeline.engine.lake.store import Lake
from pipeline.engine.schema import MAX_LIMIT, TABLES, Platform
from pmw_sandbox.world import World
from tests.support.runs import DAY, lake_tables, materialise
from tests.support.world import PIPELINE_WORLD


@pytest.mark.parametrize("platform", ["polymarket", "kalshi"])
def test_a_partition_lands_all_five_tables_with_metadata_and_passing_checks(pipeline_env: Path, platform: str) -> None:
    result = materialise(platform)
    assert result.success
    frames = lake_tables(pipeline_env, platform)
    for table, frame in frames.items():
        assert frame.height > 0, table
        assert set(frame["platform"].unique()) == {platform}
        assert set(frame["date"].unique()) == {DAY}
    metadata = result.asset_materializations_for_node("markets")[0].metadata
    for key in (
        "dagster/row_count",
        "rejects",
        "requests",
        "retries",
        "seconds_waited",
        "bytes_written",
        "preview",
        "requests_by_endpoint",
    ):
        assert key in metadata, key
    assert metadata["dagster/row_count"].value == frames["markets"].height
    evaluations = result.get_asset_check_evaluations()
    assert len(evaluations) == sum(len(CHECKS[t]) for t in TABLES)
    assert [e.check_name for e in evaluations if not e.passed] == []
    assert {e.partition for e in evaluations} == {f"{DAY.isoformat()}|{platform}"}  # one result per partition


def test_partition_contents_follow_the_partition_semantics(pipeline_env: Path) -> None:
    assert materialise("kalshi").success
    frames = lake_tables(pipeline_env, "kalshi")
    market_ids = set(frames["markets"]["id"])
    assert set(frames["trades"]["market_id"]) <= market_ids
    assert set(frames["price_history"]["market_id"]) <= market_ids
    assert set(frames["events"]["id"]) == set(frames["markets"]["event_id"])
    assert set(frames["series"]["id"]) == set(frames["markets"]["series_id"])
    assert frames["trades"]["timestamp"].dt.date().unique().to_list() == [DAY]
    # Every trade of the day in the world landed, once.
    world = World(PIPELINE_WORLD)
    day_start = int(datetime.combine(DAY, time(), UTC).timestamp())
    in_day = [
        (a.ts >= day_start) & (a.ts < day_start + 86_400) for a in map(world.activity, world.markets(Platform.KALSHI))
    ]
    assert frames["trades"].height == sum(int(mask.sum()) for mask in in_day)
    assert frames["trades"]["trade_id"].n_unique() == frames["trades"].height


@pytest.mark.slow
def test_rerunning_a_partition_leaves_the_same_rows(pipeline_env: Path) -> None:
    assert materialise("polymarket").success
    first = lake_tables(pipeline_env, "polymarket")
    assert materialise("polymarket").success
    second = lake_tables(pipeline_env, "polymarket")
    for table in TABLES:
        assert_frame_equal(first[table], second[table])


@pytest.mark.slow
def test_faults_converge_to_the_fault_free_rows(
    pipeline_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(MAX_LIMIT, "markets", 40)  # listings of several pages: boundaries to repeat items across
    assert materialise("kalshi").success
    clean = lake_tables(pipeline_env, "kalshi")
    faulty_dir = tmp_path / "faulty"
    faults = (
        "error_rate=0.05,burst_429_every=40,burst_429_length=3,cursor_expiry_rate=0.1,"
        "duplicate_items=3,unknown_fields=true,malformed_record=true"
    )
    result = materialise("kalshi", data_dir=str(faulty_dir), sandbox_faults=faults)
    assert result.success
    faulty = lake_tables(faulty_dir, "kalshi")
    for table in TABLES:
        assert_frame_equal(clean[table], faulty[table])
    rejects = Lake(faulty_dir / "lake").read_rejects("trades", "kalshi", DAY)
    assert rejects is not None and rejects.height == 1
    assert "price" in rejects["reason"][0] and "not-a-price" in rejects["raw"][0]
    metadata = {t: result.asset_materializations_for_node(t)[0].metadata for t in TABLES}
    assert metadata["trades"]["rejects"].value == 1
    assert sum(metadata[t]["retries"].value for t in TABLES) > 0
    assert sum(metadata[t]["duplicates_dropped"].value for t in TABLES) > 0


def test_a_status_outside_the_enum_fails_the_status_check(pipeline_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    original = World.market_record

    def weird_status(self: World, market, raw: bool = False):
        record = original(self, market, raw)
        return {**record, "status": "suspended"} if market.index % 7 == 0 else record

    monkeypatch.setattr(World, "market_record", weird_status)
    result = materialise("kalshi", assets=["markets"])
    assert result.success  # the data lands; the check says what is wrong with it, and does not fail the step
    assert Lake(pipeline_env / "lake").read_partition("markets", "kalshi", DAY) is not None
    evaluations = {e.check_name: e for e in result.get_asset_check_evaluations()}
    assert not evaluations["status_enum"].passed
    assert evaluations["status_enum"].severity == dg.AssetCheckSeverity.ERROR
    assert evaluations["status_enum"].metadata["violations"].value > 0
    assert evaluations["market_type_enum"].passed


def test_trades_need_their_markets_partition(pipeline_env: Path) -> None:
    result = materialise("kalshi", assets=["trades"])
    assert not result.success


def test_definitions_load_with_pools_checks_and_partitions() -> None:
    repo = defs.get_repository_def()
    ingestion = {key: asset for key, asset in repo.assets_defs_by_key.items() if key.to_user_string() in TABLES}
    assert {k.to_user_string() for k in ingestion} == set(TABLES)
    for key, asset in ingestion.items():
        assert asset.partitions_def is not None
        assert asset.op.pool == "unified_api"
        assert {c.name for c in asset.check_specs} == {c.name for c in CHECKS[key.to_user_string()]}
    trades = repo.assets_defs_by_key[dg.AssetKey("trades")]
    assert dg.AssetKey("markets") in {d.asset_key for d in trades.specs_by_key[dg.AssetKey("trades")].deps}
