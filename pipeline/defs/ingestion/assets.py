"""The five ingestion assets: series, events, markets, trades and price history, per platform and day.

`markets` lists what was live on the day; the other four read the markets partition from the lake to know
which events, series, trades and price points the partition needs. Every materialisation replaces its lake
partition atomically, reports what it did as metadata and runs the partition's checks in the same step.
Each asset yields its MaterializeResult, then one AssetCheckResult per check, each naming its asset and
check: Dagster looks check results embedded in a MaterializeResult up in the event log once more each (one
query per check, twenty checks a partition), and those it is handed with their keys it does not.
"""


from collections.abc import Iterator
from datetime import date
from typing import Any

import dagster as dg
import polars as pl

from pipeline.defs.common.landing import Rows, land
from pipeline.defs.common.reporting import Landed, figures_metadata
from pipeline.defs.common.resources import PipelineResource
from pipeline.defs.common.specs import LAKE_KINDS, OWNERS, check_specs, column_schema, daily_partitions, partition_of
from pipeline.defs.common.tags import allows_shrink
from pipeline.defs.ingestion.windows import WINDOW_DAYS, run_window
from pipeline.engine.checks import CHECKS, PartitionContext
from pipeline.engine.config import Settings
from pipeline.engine.lake.replacement import ReplacementRule
from pipeline.engine.lake.store import Lake
from pipeline.engine.normalize.partitions.protocol import PartitionSource, SelfReporting, WindowSource
from pipeline.engine.schema import lake_tables
from pipeline.engine.service_figures import ServiceFigures
from pipeline.engine.sources.coverage import Coverage
from pipeline.engine.sources.factory import api_pool
from pipeline.engine.spool.window import Window, WindowSweeps

GROUP = "ingestion"


INGESTION_TABLES = ("series", "events", "markets", "trades", "price_history")


def ingestion_partitions(settings: Settings) -> dg.MultiPartitionsDefinition:
    """The ingestion tables' partitions: the settings' platforms, by day from the first partition."""
    return daily_partitions(settings.first_day, "platform", [p.value for p in settings.platforms])


def ingestion_asset(settings: Settings, table: str, deps: list[str] | None = None) -> Any:
    """The decorator of a table's ingestion asset: partitioned by platform and day, in the source's pool, with
    the table's schema as column metadata and its registered checks (pipeline.engine.checks) as check specs.
    The tables its checks read (`Check.reads`: the trades reconciliation reads the day's price history) are deps
    too, so that a run landing both lands them first, whatever order its steps would otherwise take.
    The decorated function lands the partition with `land_partition`."""
    read_by_checks = sorted({read for check in CHECKS[table] for read in check.reads})
    partitions = ingestion_partitions(settings)
    return dg.asset(
        name=table,
        partitions_def=partitions,
        deps=[*(deps or []), *read_by_checks],
        group_name=GROUP,
        owners=OWNERS,
        kinds=LAKE_KINDS,
        pool=api_pool(settings.source),
        description=lake_tables()[table].doc,
        check_specs=check_specs(table, partitions),
        metadata={"dagster/column_schema": column_schema(table)},
    )


def land_partition(context: dg.AssetExecutionContext, pipeline: PipelineResource, table: str,
                   ctx: PartitionContext, rows: Rows, source: PartitionSource, window: Window | None = None,
                   coverage: Coverage | None = None) -> Iterator[Landed]:
    """Land the partition (pipeline.defs.common.landing), the service's figures of its answers held against it,
    and say what happened: the source, its requests and coverage (the day's, for a partition landed from a
    `window`'s sweep, whose requests are those of the window's days together, counted by the partition that swept,
    as are the service's figures of its answers), and the window it was read in."""
    def figures() -> ServiceFigures | None:
        return source.figures(table) if isinstance(source, SelfReporting) else None

    def metadata() -> dict[str, Any]:
        """What the source did, asked once the rows are written (a stream is read as it is written)."""
        requests, covered = source.requests(), coverage if coverage is not None else source.coverage()
        if covered.incomplete:
            context.log.warning("%s %s %s is incomplete: %d markets could not be read back to the day's start",
                                table, ctx.platform, ctx.day, len(covered.incomplete))
        about = {"window": window.tag, WINDOW_DAYS: len(window.days)} if window is not None else {}
        return {"source": pipeline.settings().source.value, **requests.as_metadata(), **covered.as_metadata(),
                **about, **figures_metadata(figures())}

    for event in land(pipeline, table, ctx, rows, metadata, figures=figures, allow_shrink=allows_shrink(context)):
        if isinstance(event, dg.MaterializeResult):
            context.log.info("%s %s %s: %d rows, %d rejects, %d requests", table, ctx.platform, ctx.day,
                             event.metadata["dagster/row_count"], event.metadata["rejects"],
                             event.metadata["requests"])
        yield event


def markets_partition(lake: Lake, platform: str, day: date) -> pl.DataFrame:
    """The partition's markets, each once: a market listed twice is the `unique_key` check's to report, and
    its trades and prices are asked for once."""
    frame = lake.read_partition("markets", platform, day)
    if frame is None:
        raise dg.Failure(f"markets {platform} {day} has not landed yet; materialise it first")
    return frame.unique("id", keep="first", maintain_order=True)


def _markets_asset(settings: Settings) -> dg.AssetsDefinition:
    """`markets`: what was live on the day."""

    @ingestion_asset(settings, "markets")
    def markets(context: dg.AssetExecutionContext, pipeline: PipelineResource) -> Iterator[Landed]:
        platform, day = partition_of(context)
        with pipeline.source(platform) as source:
            result = source.markets(day)
            rule = ReplacementRule.of(pipeline.settings(), allows_shrink(context))
            rule.refuse_empty_listing(pipeline.lake(), platform, day, result.rows.height + result.rejects.height)
            ids = frozenset(result.rows["id"].to_list())
            yield from land_partition(context, pipeline, "markets", PartitionContext(platform, day, ids), result,
                                      source)

    return markets


def _catalogue_member_asset(settings: Settings, table: str, id_column: str) -> dg.AssetsDefinition:
    """`events` or `series`: the catalogue entries that the partition's markets point at."""

    @ingestion_asset(settings, table, deps=["markets"])
    def member(context: dg.AssetExecutionContext, pipeline: PipelineResource) -> Iterator[Landed]:
        platform, day = partition_of(context)
        market_rows = markets_partition(pipeline.lake(), platform, day)
        wanted = set(market_rows[id_column].drop_nulls().to_list())
        with pipeline.source(platform) as source:
            result = source.members(day, table, wanted)
            yield from land_partition(context, pipeline, table, PartitionContext(platform, day, markets=market_rows),
                                      result, source)

    return member


def _per_market_asset(settings: Settings, table: str) -> dg.AssetsDefinition:
    """`trades` or `price_history`: read market by market, for the day alone or from its window's sweep."""

    @ingestion_asset(settings, table, deps=["markets"])
    def per_market(context: dg.AssetExecutionContext, pipeline: PipelineResource) -> Iterator[Landed]:
        platform, day = partition_of(context)
        market_rows = markets_partition(pipeline.lake(), platform, day)
        window = run_window(context, platform, day)
        with pipeline.source(platform) as source:
            coverage = None
            if window is not None and window.first < window.last and isinstance(source, WindowSource):
                run_settings = pipeline.settings()
                sweeps, coverage = WindowSweeps(run_settings.windows_dir, run_settings.lock_timeout_s), Coverage()
                chunks = sweeps.day_stream(source, table, window, day, market_rows, coverage)
            else:
                window = None
                chunks = (source.trades if table == "trades" else source.price_history)(day, market_rows)
            ctx = PartitionContext(platform, day, frozenset(market_rows["id"].to_list()), markets=market_rows)
            yield from land_partition(context, pipeline, table, ctx, chunks, source, window, coverage)

    return per_market


def ingestion_assets(settings: Settings) -> list[dg.AssetsDefinition]:
    """The five ingestion assets, in INGESTION_TABLES' order, partitioned and pooled as `settings` say."""
    return [_catalogue_member_asset(settings, "series", "series_id"),
            _catalogue_member_asset(settings, "events", "event_id"), _markets_asset(settings),
            _per_market_asset(settings, "trades"), _per_market_asset(settings, "price_history")]
