"""The five ingestion assets: series, events, markets, trades and price history, per platform and day.

`markets` lists what was live on the day; the other four read the markets partition from the lake to know
which events, series, trades and price points the partition needs. Every materialisation replaces its lake
partition atomically, reports what it did as metadata and runs the partition's checks in the same step.
"""


import warnings
from collections.abc import Iterable
from datetime import UTC, date, datetime
from typing import Any

import dagster as dg
import polars as pl

from pipeline.assets.stream import land_stream, unified_chunks
from pipeline.checks import CHECKS, CheckOutcome, PartitionContext, run_checks
from pipeline.config import Settings, partitions_start, platforms_from_env
from pipeline.lake import Lake, PartitionWrite
from pipeline.normalize.unified import Normalised, normalise
from pipeline.resources import PipelineResource
from pipeline.schema import TABLES
from pipeline.sources.factory import UNIFIED_API_POOL
from pipeline.sources.http import RequestStats
from pipeline.sources.unified import UnifiedSource
from pipeline.warehouse import ensure_raw_views

GROUP = "ingestion"
OWNERS = ["team:data-platform"]
PREVIEW_ROWS = 5


def _partitions() -> dg.MultiPartitionsDefinition:
    return dg.MultiPartitionsDefinition({
        "date": dg.DailyPartitionsDefinition(start_date=partitions_start(), timezone="UTC"),
        "platform": dg.StaticPartitionsDefinition([p.value for p in platforms_from_env()]),
    })


PARTITIONS = _partitions()


def partition_of(context: dg.AssetExecutionContext) -> tuple[str, date]:
    keys = context.partition_key.keys_by_dimension  # type: ignore[union-attr]
    return keys["platform"], date.fromisoformat(keys["date"])


def _column_schema(table: str) -> dg.TableSchema:
    return dg.TableSchema(columns=[
        dg.TableColumn(c.name, c.field.type_label() if c.field else str(c.dtype), description=c.doc or None)
        for c in TABLES[table].columns
    ])


def _check_specs(table: str) -> list[dg.AssetCheckSpec]:
    """Checks partitioned like their asset, so the UI shows a result per (platform, day).

    Partitioned checks are a preview feature of Dagster 1.13, chosen deliberately: without them a check
    shows only its latest run, whichever partition that was. Its warning is silenced here alone.
    """
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=dg.PreviewWarning, message=".*AssetCheckSpec.*")
        return [
            dg.AssetCheckSpec(check.name, asset=table, description=check.description, partitions_def=PARTITIONS)
            for check in CHECKS[table]
        ]


def _asset(table: str, deps: list[str] | None = None) -> Any:
    return dg.asset(
        name=table,
        partitions_def=PARTITIONS,
        deps=deps or [],
        group_name=GROUP,
        owners=OWNERS,
        kinds={"polars", "parquet"},
        pool=UNIFIED_API_POOL,
        description=TABLES[table].doc,
        check_specs=_check_specs(table),
        metadata={"dagster/column_schema": _column_schema(table)},
    )


def _preview(frame: pl.DataFrame) -> dg.MetadataValue:
    """The first rows as a Markdown table, every value cut to 40 characters."""
    def cell(value: Any) -> str:
        return ("" if value is None else str(value)).replace("|", "/").replace("\n", " ")[:40]

    lines = ["| " + " | ".join(frame.columns) + " |", "|" + "---|" * frame.width]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in frame.head(PREVIEW_ROWS).iter_rows()]
    return dg.MetadataValue.md("\n".join(lines))


def _land(context: dg.AssetExecutionContext, pipeline: PipelineResource, table: str, platform: str, day: date,
          result: Normalised, requests: RequestStats, market_ids: frozenset[str]) -> dg.MaterializeResult:
    """Write the partition, refresh the catalogue views, run the checks, and say what happened."""
    settings = pipeline.settings()
    lake = Lake(settings.lake_dir)
    written = lake.write_partition(table, platform, day, result.rows, result.rejects)
    ensure_raw_views(settings.warehouse_path, lake)
    outcomes = run_checks(table, result.rows, PartitionContext(platform, day, market_ids))
    return _result(context, settings, written, outcomes, result.rows, requests)


def _land_stream(context: dg.AssetExecutionContext, pipeline: PipelineResource, table: str, platform: str,
                 day: date, records: Iterable[dict[str, Any]], fetch: "_Fetch",
                 market_ids: frozenset[str]) -> dg.MaterializeResult:
    """`_land` for a stream of records too long to hold: written and checked a market at a time."""
    settings = pipeline.settings()
    lake = Lake(settings.lake_dir)
    chunks = unified_chunks(table, records, platform=platform, day=day, source=settings.source.value,
                            fetched_at=datetime.now(UTC))
    landed = land_stream(lake, table, platform, day, chunks, market_ids=market_ids)
    ensure_raw_views(settings.warehouse_path, lake)
    return _result(context, settings, landed.written, landed.outcomes, landed.head, fetch.requests())


def _result(context: dg.AssetExecutionContext, settings: Settings, written: PartitionWrite,
            outcomes: list[CheckOutcome], head: pl.DataFrame, requests: RequestStats) -> dg.MaterializeResult:
    """What a materialisation did, as metadata, and its checks' results."""
    context.log.info("%s %s %s: %d rows, %d rejects, %d requests", written.table, written.platform, written.day,
                     written.rows, written.rejects, requests.requests)
    return dg.MaterializeResult(
        metadata={
            "dagster/row_count": written.rows,
            "rejects": written.rejects,
            "bytes_written": written.bytes_written,
            "path": str(written.path),
            "source": settings.source.value,
            **requests.as_metadata(),
            "preview": _preview(head),
        },
        check_results=[
            dg.AssetCheckResult(
                check_name=outcome.name,
                passed=outcome.passed,
                severity=dg.AssetCheckSeverity.ERROR,
                description=outcome.description,
                metadata={"violations": outcome.violations,
                          **({"examples": dg.MetadataValue.json(outcome.examples)} if outcome.examples else {})},
            )
            for outcome in outcomes
        ],
    )


def _markets_partition(lake: Lake, platform: str, day: date) -> pl.DataFrame:
    frame = lake.read_partition("markets", platform, day)
    if frame is None:
        raise dg.Failure(f"markets {platform} {day} has not landed yet; materialise it first")
    return frame


def _partition_market_ids(lake: Lake, platform: str, day: date) -> frozenset[str]:
    return frozenset(_markets_partition(lake, platform, day)["id"].to_list())


class _Fetch:
    """One asset step's source session: the source and the requests made since the step began."""

    def __init__(self, source: UnifiedSource) -> None:
        self.source = source
        self._before = source.http.stats.snapshot()

    def requests(self) -> RequestStats:
        return self.source.http.stats.since(self._before)


@_asset("markets")
def markets(context: dg.AssetExecutionContext, pipeline: PipelineResource) -> dg.MaterializeResult:
    platform, day = partition_of(context)
    with pipeline.source() as source:
        fetch = _Fetch(source)
        records, fetched_at = source.markets_live_on(platform, day)
        result = normalise("markets", records, platform=platform, day=day,
                           source=pipeline.settings().source.value, fetched_at=fetched_at)
        ids = frozenset(result.rows["id"].to_list())
        return _land(context, pipeline, "markets", platform, day, result, fetch.requests(), ids)


def _catalogue_member_asset(table: str, id_column: str) -> dg.AssetsDefinition:
    """`events` or `series`: the catalogue entries that the partition's markets point at."""

    @_asset(table, deps=["markets"])
    def member(context: dg.AssetExecutionContext, pipeline: PipelineResource) -> dg.MaterializeResult:
        platform, day = partition_of(context)
        wanted = set(_markets_partition(pipeline.lake(), platform, day)[id_column].drop_nulls().to_list())
        with pipeline.source() as source:
            fetch = _Fetch(source)
            records, fetched_at = source.members_of(platform, table, wanted)
            result = normalise(table, records, platform=platform, day=day,
                               source=pipeline.settings().source.value, fetched_at=fetched_at)
            return _land(context, pipeline, table, platform, day, result, fetch.requests(), frozenset())

    return member


events = _catalogue_member_asset("events", "event_id")
series = _catalogue_member_asset("series", "series_id")


def _last_trade_times(market_rows: pl.DataFrame) -> list[tuple[str, int | None]]:
    """Each market with the time of its latest trade as the listing reported it (None if it did not)."""
    latest = market_rows.select(
        pl.col("id"),
        pl.col("last_trades").list.eval(pl.element().struct.field("timestamp")).list.max().alias("last"),
    ).sort("id")
    return [(market_id, int(last.timestamp()) if last is not None else None)
            for market_id, last in latest.iter_rows()]


@_asset("trades", deps=["markets"])
def trades(context: dg.AssetExecutionContext, pipeline: PipelineResource) -> dg.MaterializeResult:
    platform, day = partition_of(context)
    market_rows = _markets_partition(pipeline.lake(), platform, day)
    with pipeline.source() as source:
        fetch = _Fetch(source)
        raw = source.trades(day, _last_trade_times(market_rows))
        ids = frozenset(market_rows["id"].to_list())
        return _land_stream(context, pipeline, "trades", platform, day, raw, fetch, ids)


@_asset("price_history", deps=["markets"])
def price_history(context: dg.AssetExecutionContext, pipeline: PipelineResource) -> dg.MaterializeResult:
    platform, day = partition_of(context)
    market_rows = _markets_partition(pipeline.lake(), platform, day)
    ids = market_rows["id"].sort().to_list()
    with pipeline.source() as source:
        fetch = _Fetch(source)
        raw = source.price_points(day, ids)
        return _land_stream(context, pipeline, "price_history", platform, day, raw, fetch, frozenset(ids))


INGESTION_ASSETS = [series, events, markets, trades, price_history]

