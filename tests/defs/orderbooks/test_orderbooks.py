"""Orderbook snapshot rounds, end to end on the in-process sandbox: rounds accumulate in the day's partition,
a retried round lands once, a crossed book is landed and reported, the mart agrees with polars.

(No `from __future__ import annotations`: Dagster reads annotations live.)
"""

from collections.abc import Iterator
from datetime import UTC, datetime, time
from pathlib import Path

import dagster as dg
import duckdb
import polars as pl
import pytest

from pipeline.cli.sql.models import run_sql
from pipeline.defs.common.resources import PipelineResource
from pipeline.defs.orderbooks.assets import SNAPSHOT_AT_TAG, round_time
from pipeline.engine.lake.store import Lake
from pipeline.engine.schema import Platform
from pipeline.engine.sources.orderbooks import busiest_open
from pmw_sandbox import orderbooks, plug
from pmw_sandbox.app import SandboxApp
from tests.support.location import INGESTION_ASSETS, orderbook_round
from tests.support.runs import DAY, shared_instance
from tests.support.world import PIPELINE_WORLD, pipeline_sandbox

TOP_N = 6
WATCHED = {Platform.KALSHI: "KX-NOT-IN-THE-WORLD",
           Platform.LIMITLESS: orderbooks.BOOK_ONLY_MARKETS[Platform.LIMITLESS][0],
           Platform.MANIFOLD: orderbooks.BOOK_ONLY_MARKETS[Platform.MANIFOLD][1]}
ROUNDS = [datetime.combine(DAY, time(hour), UTC) for hour in (6, 12, 18)]


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The pipeline's settings on the test world, a watch list, small rounds."""
    root = tmp_path_factory.mktemp("orderbooks")
    watchlist = root / "watchlist.csv"
    watchlist.write_text("# platform,market_id\n" + "".join(f"{p.value},{m}\n" for p, m in WATCHED.items()))
    with pytest.MonkeyPatch.context() as patch:
        for name in ("PMW_API_URL", "PMW_API_KEY", "PMW_PLATFORMS", "PMW_SANDBOX_FAULTS", "DAGSTER_HOME"):
            patch.delenv(name, raising=False)
        for name, value in {"PMW_SOURCE": "sandbox", "PMW_DATA_DIR": str(root / "data"),
                            "PMW_SANDBOX_SEED": str(PIPELINE_WORLD.seed), "PMW_SANDBOX_END": DAY.isoformat(),
                            "PMW_RATE_LIMIT_DB": str(root / "budget.sqlite"), "PMW_MAX_BACKOFF_S": "0.01",
                            "PMW_MAX_ATTEMPTS": "2", "PMW_ORDERBOOK_TOP_N": str(TOP_N),
                            "PMW_ORDERBOOK_WATCHLIST": str(watchlist)}.items():
            patch.setenv(name, value)
        patch.setattr(plug, "sandbox_app", pipeline_sandbox)
        yield root / "data"


def _land_markets(platform: Platform = Platform.KALSHI) -> None:
    """The day's markets of the platform, which its round takes its busiest from."""
    markets = next(a for a in INGESTION_ASSETS if a.key.to_user_string() == "markets")
    key = dg.MultiPartitionKey({"platform": platform.value, "date": DAY.isoformat()})
    with dg.build_asset_context(partition_key=key, resources={"pipeline": PipelineResource()},
                                instance=shared_instance()) as context:
        list(markets(context))


def _sandbox(faults: str = "") -> SandboxApp:
    return pipeline_sandbox(PIPELINE_WORLD.seed, DAY, faults, "", PIPELINE_WORLD.days)


def _round(platform: Platform, at: datetime, faults: str = "") -> dg.ExecuteInProcessResult:
    """One snapshot round of the platform at `at`, the sandbox serving its world's books of that moment."""
    _sandbox(faults).live_at = at
    resource = PipelineResource(sandbox_faults=faults) if faults else PipelineResource()
    return dg.materialize(
        [orderbook_round],
        partition_key=dg.MultiPartitionKey({"platform": platform.value, "date": at.date().isoformat()}),
        resources={"pipeline": resource},
        instance=shared_instance(),
        tags={SNAPSHOT_AT_TAG: at.isoformat()},
        raise_on_error=False,
    )


def _checks(result: dg.ExecuteInProcessResult) -> dict[str, dg.AssetCheckEvaluation]:
    return {f"{e.asset_key.to_user_string()}:{e.check_name}": e for e in result.get_asset_check_evaluations()}


def _served_levels(platform: Platform, market_ids: list[str], at: datetime) -> int:
    books = [orderbooks.book(_sandbox().world, platform, m, at) for m in market_ids]
    return sum(len(b[o][s]) for b in books if b is not None for o in ("yes", "no") for s in ("bids", "asks"))


def test_three_rounds_one_retried_land_three_snapshots_per_market(data_dir: Path) -> None:
    _land_markets()
    lake = Lake(data_dir / "lake")
    assert _round(Platform.KALSHI, ROUNDS[0]).success
    failed = _round(Platform.KALSHI, ROUNDS[1], faults="error_rate=0.5")
    assert not failed.success
    assert len(lake.round_files("orderbook_snapshots", "kalshi", DAY)) == 1  # the first round, untouched
    for at in ROUNDS[1:]:
        assert _round(Platform.KALSHI, at).success
    repeated = _round(Platform.KALSHI, ROUNDS[2])  # a round run again after it landed replaces itself
    assert repeated.success and all(e.passed for e in _checks(repeated).values())

    snapshots = lake.read_partition("orderbook_snapshots", "kalshi", DAY)
    levels = lake.read_partition("orderbook_levels", "kalshi", DAY)
    assert snapshots is not None and levels is not None
    per_market = snapshots.group_by("market_id").agg(pl.col("snapshot_at").sort())
    assert per_market.height == TOP_N  # the watched id the world does not know is a reject, not a row
    assert all(times == ROUNDS for times in per_market["snapshot_at"].to_list())
    ids = per_market["market_id"].to_list()
    assert levels.height == sum(_served_levels(Platform.KALSHI, ids, at) for at in ROUNDS)
    assert levels.unique(["snapshot_at", "market_id", "outcome_side", "book_side", "level"]).height == levels.height
    assert lake.rejects_count("orderbook_snapshots", "kalshi", DAY) == 3  # the unknown watched id, each round
    rejects = lake.read_rejects("orderbook_snapshots", "kalshi", DAY)
    assert rejects is not None and rejects["reason"].str.contains("NOT_FOUND").all()

    assert run_sql(["+orderbook_daily"], say=lambda _: None, instance=dg.DagsterInstance.ephemeral())
    with duckdb.connect(str(data_dir / "warehouse.duckdb"), read_only=True) as db:
        mart = db.sql("SELECT market_id, snapshots, time_weighted_spread, empty_side_share "
                      "FROM marts.orderbook_daily WHERE platform = 'kalshi'").pl()
    end_of_day = datetime.combine(DAY, time(), UTC) + (ROUNDS[1] - ROUNDS[0]) * 4
    expected = (
        snapshots.sort("market_id", "snapshot_at")
        .with_columns(held=(pl.col("snapshot_at").shift(-1).over("market_id").fill_null(end_of_day)
                            - pl.col("snapshot_at")).dt.total_seconds())
        .group_by("market_id")
        .agg(snapshots=pl.len(),
             time_weighted_spread=(pl.col("spread") * pl.col("held")).sum() / pl.col("held").filter(
                 pl.col("spread").is_not_null()).sum(),
             empty_side_share=((pl.col("bid_levels") == 0) | (pl.col("ask_levels") == 0)).mean())
    )
    joined = mart.join(expected, on="market_id", suffix="_polars")
    assert joined.height == TOP_N and (joined["snapshots"] == 3).all()
    for column in ("time_weighted_spread", "empty_side_share"):
        assert (joined[column] - joined[f"{column}_polars"]).abs().max() < 1e-12, column


def test_a_crossed_book_is_landed_and_reported_and_a_book_served_best_last_is_read_best_first(
        data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PMW_SANDBOX_READINGS", "book_order=best_last")  # Kalshi's own order: best price last
    at = datetime.combine(DAY, time(9), UTC)
    faults = "crossed_book=true"
    pipeline_sandbox(PIPELINE_WORLD.seed, DAY, faults, "book_order=best_last", PIPELINE_WORLD.days).live_at = at
    result = dg.materialize([orderbook_round], partition_key=dg.MultiPartitionKey(
        {"platform": "manifold", "date": DAY.isoformat()}), resources={"pipeline": PipelineResource(
            sandbox_faults=faults)}, instance=shared_instance(), tags={SNAPSHOT_AT_TAG: at.isoformat()},
        raise_on_error=False)
    assert result.success
    failed = {name: e.metadata["violations"].value for name, e in _checks(result).items() if not e.passed}
    assert failed == {"orderbook_snapshots:book_not_crossed": 1}  # landed, reported; the levels read in order
    lake = Lake(data_dir / "lake")
    snapshots, levels = (lake.read_partition(t, "manifold", DAY) for t in ("orderbook_snapshots", "orderbook_levels"))
    assert snapshots is not None and snapshots.filter(pl.col("best_bid") > pl.col("best_ask")).height == 1
    assert levels is not None and set(levels["market_id"]) == {WATCHED[Platform.MANIFOLD]}
    book = orderbooks.book(_sandbox().world, Platform.MANIFOLD, WATCHED[Platform.MANIFOLD], at, crossed=True)
    assert book is not None
    best = levels.filter(pl.col("level") == 1, pl.col("outcome_side") == "yes")
    assert dict(zip(best["book_side"], best["price"], strict=True)) == {
        side: book["yes"][f"{side}s"][0]["price"] for side in ("bid", "ask") if book["yes"][f"{side}s"]}


def test_books_of_markets_asked_by_platform_id_after_a_404_with_lower_case_times_belong_to_the_markets_asked(
        data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    readings = "iso_times=lowercase,market_id_param=platform"  # Polymarket's books only by condition id
    monkeypatch.setenv("PMW_SANDBOX_READINGS", readings)
    _land_markets(Platform.POLYMARKET)
    at = datetime.combine(DAY, time(8), UTC)
    pipeline_sandbox(PIPELINE_WORLD.seed, DAY, "", readings, PIPELINE_WORLD.days).live_at = at
    result = dg.materialize([orderbook_round], partition_key=dg.MultiPartitionKey(
        {"platform": "polymarket", "date": DAY.isoformat()}), resources={"pipeline": PipelineResource()},
        instance=shared_instance(), tags={SNAPSHOT_AT_TAG: at.isoformat()}, raise_on_error=False)
    assert result.success and all(e.passed for e in _checks(result).values())
    lake = Lake(data_dir / "lake")
    markets = lake.read_partition("markets", "polymarket", DAY)
    snapshots = lake.read_partition("orderbook_snapshots", "polymarket", DAY)
    assert markets is not None and snapshots is not None
    assert lake.rejects_count("orderbook_snapshots", "polymarket", DAY) == 0
    assert set(snapshots["market_id"]) == set(busiest_open(markets, TOP_N))  # the service ids, as asked
    assert snapshots["timestamp"].null_count() == 0 and snapshots["_served_market_id"].is_not_null().all()
    materialised = result.asset_materializations_for_node("orderbook_round")[0]
    assert materialised.metadata["requests"].value == TOP_N + 1  # one 404, then every book by platform id first


def test_round_time_is_the_tag_or_now_on_the_cadence() -> None:
    assert round_time({}, 15, datetime(2026, 11, 21, 10, 44, 59, tzinfo=UTC)) == datetime(2026, 11, 21, 10, 30,
                                                                                           tzinfo=UTC)
    assert round_time({SNAPSHOT_AT_TAG: "2026-11-21T12:00:00+01:00"}, 60) == datetime(2026, 11, 21, 11, tzinfo=UTC)
    with pytest.raises(dg.Failure, match="no UTC offset"):
        round_time({SNAPSHOT_AT_TAG: "2026-11-21T12:00:00"}, 60)
