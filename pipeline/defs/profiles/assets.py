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

from pipeline.defs.ingestion.assets import (
    PARTITIONS,
    _check_result,
    _check_specs,
    _preview,
    partition_of,
    table_spec,
)
from pipeline.defs.resources import PipelineResource, emulator_for
from pipeline.engine.checks import PartitionContext, run_checks
from pipeline.engine.lake.replacement import ReplacementRule
from pipeline.engine.normalize.partitions.profiles import traders_rows
from pipeline.engine.sources.factory import UNIFIED_API_POOL, open_unified_source
from pipeline.engine.warehouse.views import ensure_raw_views

GROUP = "traders"
TRADER_TABLES = ("profiles", "profile_trades")


@dg.multi_asset(
    name="trader_profiles",
    specs=[table_spec(table, GROUP) for table in TRADER_TABLES],
    check_specs=[spec for table in TRADER_TABLES for spec in _check_specs(table)],
    partitions_def=PARTITIONS,
    pool=UNIFIED_API_POOL,
    description="The watched traders' profiles, metrics and trades of the day.",
)
def trader_profiles(context: dg.AssetExecutionContext, pipeline: PipelineResource) -> Iterator[
        dg.MaterializeResult | dg.AssetCheckResult]:
    platform, day = partition_of(context)
    settings = pipeline.unified_api_settings("trader profiles")
    traders = [item.id for item in settings.trader_watchlist if item.platform == platform]
    with open_unified_source(settings, emulator_for(settings)) as unified:
        read = traders_rows(unified.http, platform, day, traders, settings.source.value)
        requests = unified.http.stats.snapshot()
    results, failure = read.tables, read.failure  # on a failure the profiles still land, the trades do not
    lake = pipeline.lake()
    rule = ReplacementRule.of(settings)
    written = {table: lake.write_partition(table, platform, day, result.rows, result.rejects,
                                           rule.approver(table, platform, day))
               for table, result in results.items()}
    ensure_raw_views(settings.warehouse_path, lake)
    context.log.info("traders %s %s: %d traders, %s trades, %d requests", platform, day, len(traders),
                     written["profile_trades"].rows if failure is None else "no", requests.requests)
    for table, write in written.items():
        yield dg.MaterializeResult(asset_key=table, metadata={
            "dagster/row_count": write.rows, "traders": len(traders), "rejects": write.rejects,
            "bytes_written": write.bytes_written, "path": str(write.path), **requests.as_metadata(),
            "preview": _preview(results[table].rows)})
    for table, result in results.items():
        for outcome in run_checks(table, result.rows, PartitionContext(platform, day), result.rejects):
            yield _check_result(dg.AssetKey(table), outcome)
    if failure is not None:
        raise dg.Failure(f"profile_trades {platform} {day} not landed (the profiles were): {failure}")
