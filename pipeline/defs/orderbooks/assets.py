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

from pipeline.defs.common.landing import land
from pipeline.defs.common.reporting import Landed
from pipeline.defs.common.resources import PipelineResource, emulator_for
from pipeline.defs.common.specs import daily_partitions, partition_of, tables_asset
from pipeline.engine.checks import PartitionContext
from pipeline.engine.config import Settings
from pipeline.engine.lake.store import Lake
from pipeline.engine.normalize.partitions.orderbooks import round_rows
from pipeline.engine.schema import MARKET_PLATFORMS, ORDERBOOK_PLATFORMS
from pipeline.engine.sources.factory import UNIFIED_API_POOL, open_unified_source
from pipeline.engine.sources.orderbooks import busiest_open, round_list

GROUP = "orderbooks"
SNAPSHOT_AT_TAG = "pmw/snapshot_at"
ORDERBOOK_TABLES = ("orderbook_levels", "orderbook_snapshots")

def orderbook_partitions(settings: Settings) -> dg.MultiPartitionsDefinition:
    """The order books' partitions: the four platforms with books, by day from the first partition."""
    return daily_partitions(settings.first_day, "platform", [p.value for p in ORDERBOOK_PLATFORMS])


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


def orderbook_round_asset(settings: Settings) -> dg.AssetsDefinition:
    """The snapshot round's multi-asset, partitioned by the four platforms with books and day."""
    @tables_asset("orderbook_round", ORDERBOOK_TABLES, GROUP, orderbook_partitions(settings), UNIFIED_API_POOL,
                  description="One snapshot round of a platform's orderbooks, landed beside the day's earlier rounds.")
    def orderbook_round(context: dg.AssetExecutionContext, pipeline: PipelineResource) -> Iterator[Landed]:
        platform, day = partition_of(context)
        run_settings = pipeline.unified_api_settings(
            "orderbook snapshots", why=" (PMW_SOURCE=direct serves no orderbooks of Limitless or Manifold)")
        round_at = round_time(context.run.tags, run_settings.orderbook_every_min)
        lake = pipeline.lake()
        market_ids, platform_ids = round_markets(run_settings, lake, platform, day)
        with open_unified_source(run_settings, emulator_for(run_settings)) as unified:
            rows = round_rows(unified.http, platform, day, round_at, market_ids, platform_ids,
                              run_settings.source.value)
            requests = unified.http.stats.snapshot()
        context.log.info("orderbooks %s %s round %s: %d markets, %d levels, %d rejects, %d requests", platform, day,
                         round_at.isoformat(), len(market_ids), rows.levels.rows.height, rows.snapshots.rejects.height,
                         requests.requests)
        about = {"round": round_at.isoformat(), "markets": len(market_ids), **requests.as_metadata()}
        for table, landed in (("orderbook_levels", rows.levels), ("orderbook_snapshots", rows.snapshots)):
            yield from land(pipeline, table, PartitionContext(platform, day), landed, about, round_at=round_at)

    return orderbook_round
