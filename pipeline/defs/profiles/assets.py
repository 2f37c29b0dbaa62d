"""The watched traders (PMW_TRADER_WATCHLIST), per platform and day: `profiles` and `profile_trades`.

One multi-asset reads every watched trader of the platform: their profile and metrics (the API states them as
of the request, so a day's partition holds them as of when it was fetched: the schedule fetches yesterday just
after midnight) and their trades of the day. Both tables' partitions are replaced whole, atomically, like the
daily ingestion's, under the same rule against shrinking; re-running a day gives the same trades (each once by
its id; a trade belongs to the day of its timestamp, so no trade lands in two days). When a trader's trades
cannot be read, the profiles still land and the step fails naming the error: `profile_trades` keeps the
partition it had rather than a part of the day. The assets run in the
`unified_api` pool and through its request budget.
"""


from collections.abc import Iterator

import dagster as dg

from pipeline.defs.common.landing import land
from pipeline.defs.common.resources import PipelineResource, emulator_for
from pipeline.defs.common.specs import partition_of, tables_asset
from pipeline.defs.common.tags import allows_shrink
from pipeline.defs.ingestion.assets import ingestion_partitions
from pipeline.engine.checks import PartitionContext
from pipeline.engine.config import Settings
from pipeline.engine.normalize.partitions.profiles import traders_rows
from pipeline.engine.sources.factory import UNIFIED_API_POOL, open_unified_source

GROUP = "traders"
TRADER_TABLES = ("profiles", "profile_trades")


def trader_profiles_asset(settings: Settings) -> dg.AssetsDefinition:
    """The watched traders' multi-asset, partitioned as the ingestion assets (the settings' platforms, by day)."""
    @tables_asset("trader_profiles", TRADER_TABLES, GROUP, ingestion_partitions(settings), UNIFIED_API_POOL,
                  description="The watched traders' profiles, metrics and trades of the day.")
    def trader_profiles(context: dg.AssetExecutionContext, pipeline: PipelineResource) -> Iterator[
            dg.MaterializeResult | dg.AssetCheckResult]:
        platform, day = partition_of(context)
        run_settings = pipeline.unified_api_settings("trader profiles")
        traders = [item.id for item in run_settings.trader_watchlist if item.platform == platform]
        with open_unified_source(run_settings, emulator_for(run_settings)) as unified:
            read = traders_rows(unified.http, platform, day, traders, run_settings.source.value)
            requests = unified.http.stats.snapshot()
        results, failure = read.tables, read.failure  # on a failure the profiles still land, the trades do not
        context.log.info("traders %s %s: %d traders, %s trades, %d requests", platform, day, len(traders),
                         results["profile_trades"].rows.height if failure is None else "no", requests.requests)
        for table, result in results.items():
            yield from land(pipeline, table, PartitionContext(platform, day), result,
                            {"traders": len(traders), **requests.as_metadata()}, allow_shrink=allows_shrink(context))
        if failure is not None:
            raise dg.Failure(f"profile_trades {platform} {day} not landed (the profiles were): {failure}")

    return trader_profiles

