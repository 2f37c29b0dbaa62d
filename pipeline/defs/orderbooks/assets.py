"""Orderbook snapshots: one multi-asset lands a platform's round into `orderbook_levels` and `orderbook_snapshots`.

Partitioned by day and platform (the four platforms with orderbooks). A run takes one round: the round's time is
the run's `pmw/snapshot_at` tag (the schedule sets it to its tick, and a retried or re-executed run keeps it),
else the current time rounded down to the cadence (PMW_ORDERBOOK_EVERY_MIN). The round lands as its own file in
the day's partitions of both tables (`Lake.write_round`): earlier rounds are never rewritten, a retried round
replaces only itself, and a reader of the day sees whole rounds only. The checks then run on the whole day, so
that `unique_key` sees every round; a crossed book, a round time outside the day and any other data problem is
reported by its check, never a failed step.

The round reads the unified API (PMW_SOURCE=api or sandbox) in the `unified_api` pool and through its request
budget, like the daily ingestion: the platforms' own APIs (PMW_SOURCE=direct) serve no Limitless or Manifold
books.
"""


from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta

import dagster as dg
import polars as pl

from pipeline.defs.ingestion.assets import (
    _check_result,
    _check_specs,
    _preview,
    partition_of,
    table_spec,
)
from pipeline.defs.resources import PipelineResource, emulator_for
from pipeline.engine.checks import PartitionContext, run_checks
from pipeline.engine.config import Settings, partitions_start
from pipeline.engine.lake.store import Lake
from pipeline.engine.lake.writes import PartitionWrite
from pipeline.engine.normalize.partitions.orderbooks import round_rows
from pipeline.engine.schema import MARKET_PLATFORMS, ORDERBOOK_PLATFORMS, REJECTS_SCHEMA
from pipeline.engine.sources.factory import UNIFIED_API_POOL, open_unified_source
from pipeline.engine.sources.orderbooks import busiest_open, round_list
from pipeline.engine.warehouse.views import ensure_raw_views

GROUP = "orderbooks"
SNAPSHOT_AT_TAG = "pmw/snapshot_at"
ORDERBOOK_TABLES = ("orderbook_levels", "orderbook_snapshots")

ORDERBOOK_PARTITIONS = dg.MultiPartitionsDefinition({
    "date": dg.DailyPartitionsDefinition(start_date=partitions_start(), timezone="UTC"),
    "platform": dg.StaticPartitionsDefinition([p.value for p in ORDERBOOK_PLATFORMS]),
})


def round_time(tags: dict[str, str], every_min: int, now: datetime | None = None) -> datetime:
    """The round's time: the run's `pmw/snapshot_at` tag, else now rounded down to the cadence."""
    text = tags.get(SNAPSHOT_AT_TAG)
    if text is None:
        moment = (now or datetime.now(UTC)).astimezone(UTC).replace(second=0, microsecond=0)
        midnight = moment.replace(hour=0, minute=0)
        return midnight + timedelta(minutes=(moment - midnight) // timedelta(minutes=every_min) * every_min)
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise dg.Failure(f"run tag {SNAPSHOT_AT_TAG}={text!r} is not an ISO 8601 time") from None
    if moment.tzinfo is None:
        raise dg.Failure(f"run tag {SNAPSHOT_AT_TAG}={text!r} has no UTC offset: its moment is unknown")
    return moment.astimezone(UTC).replace(microsecond=0)


def round_markets(settings: Settings, lake: Lake, platform: str, day: date) -> tuple[list[str], dict[str, str]]:
    """The round's market ids: for Polymarket and Kalshi the busiest open markets of the latest markets partition
    up to the day, then the watch list's markets of the platform; and the platform ids of those the partition
    holds (a market the API knows only by its platform id is asked by it)."""
    busiest: list[str] = []
    platform_ids: dict[str, str] = {}
    if platform in MARKET_PLATFORMS:
        landed = [d for p, d in lake.partitions("markets") if p == platform and d <= day]
        if landed:
            markets = lake.read_partition("markets", platform, max(landed))
            busiest = busiest_open(markets, settings.orderbook_top_n)
            platform_ids = dict(markets.select("id", "platform_id").iter_rows()) if markets is not None else {}
    watched = [item.id for item in settings.orderbook_watchlist if item.platform == platform]
    return round_list(busiest, watched), platform_ids


@dg.multi_asset(
    name="orderbook_round",
    specs=[table_spec(table, GROUP) for table in ORDERBOOK_TABLES],
    check_specs=[spec for table in ORDERBOOK_TABLES for spec in _check_specs(table, ORDERBOOK_PARTITIONS)],
    partitions_def=ORDERBOOK_PARTITIONS,
    pool=UNIFIED_API_POOL,
    description="One snapshot round of a platform's orderbooks, landed beside the day's earlier rounds.",
)
def orderbook_round(context: dg.AssetExecutionContext, pipeline: PipelineResource) -> Iterator[
        dg.MaterializeResult | dg.AssetCheckResult]:
    platform, day = partition_of(context)
    settings = pipeline.unified_api_settings(
        "orderbook snapshots", why=" (PMW_SOURCE=direct serves no orderbooks of Limitless or Manifold)")
    round_at = round_time(context.run.tags, settings.orderbook_every_min)
    lake = pipeline.lake()
    market_ids, platform_ids = round_markets(settings, lake, platform, day)
    with open_unified_source(settings, emulator_for(settings)) as unified:
        rows = round_rows(unified.http, platform, day, round_at, market_ids, platform_ids, settings.source.value)
        requests = unified.http.stats.snapshot()
    written = {
        "orderbook_levels": lake.write_round("orderbook_levels", platform, day, round_at, rows.levels.rows),
        "orderbook_snapshots": lake.write_round("orderbook_snapshots", platform, day, round_at,
                                                rows.snapshots.rows, rows.snapshots.rejects),
    }
    ensure_raw_views(settings.warehouse_path, lake)
    context.log.info("orderbooks %s %s round %s: %d markets, %d levels, %d rejects, %d requests", platform, day,
                     round_at.isoformat(), len(market_ids), rows.levels.rows.height, rows.snapshots.rejects.height,
                     requests.requests)
    days = {table: lake.read_partition(table, platform, day) for table in ORDERBOOK_TABLES}
    for table, write in written.items():
        day_rows = days[table]
        assert day_rows is not None  # this round has just landed in it
        yield _materialization(table, write, day_rows, round_at, len(market_ids), requests.as_metadata())
    no_rejects = pl.DataFrame(schema=REJECTS_SCHEMA)  # the rounds' rejects are counted in the metadata
    for table, day_rows in days.items():
        assert day_rows is not None
        for outcome in run_checks(table, day_rows, PartitionContext(platform, day), no_rejects):
            yield _check_result(dg.AssetKey(table), outcome)


def _materialization(table: str, write: PartitionWrite, day_rows: pl.DataFrame, round_at: datetime, markets: int,
                     requests: dict[str, object]) -> dg.MaterializeResult:
    """The day's partition as it stands after the round (`dagster/row_count`: every round of the day so far),
    and what the round itself landed."""
    return dg.MaterializeResult(
        asset_key=table,
        metadata={
            "dagster/row_count": day_rows.height,
            "rounds": day_rows["snapshot_at"].n_unique(),
            "round": round_at.isoformat(),
            "round_rows": write.rows,
            "markets": markets,
            "rejects": write.rejects,
            "bytes_written": write.bytes_written,
            "path": str(write.path),
            **requests,
            "preview": _preview(day_rows.filter(pl.col("snapshot_at") == round_at)),
        },
    )
