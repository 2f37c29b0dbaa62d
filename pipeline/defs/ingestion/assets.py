"""The five ingestion assets: series, events, markets, trades and price history, per platform and day.

`markets` lists what was live on the day; the other four read the markets partition from the lake to know
which events, series, trades and price points the partition needs. Every materialisation replaces its lake
partition atomically, reports what it did as metadata and runs the partition's checks in the same step.
Each asset yields its MaterializeResult, then one AssetCheckResult per check, each naming its asset and
check: Dagster looks check results embedded in a MaterializeResult up in the event log once more each (one
query per check, twenty checks a partition), and those it is handed with their keys it does not.
"""


import math
import warnings
from collections.abc import Iterable, Iterator, Mapping
from datetime import date, datetime, time
from typing import Any

import dagster as dg
import polars as pl

from pipeline.defs.ingestion.windows import WINDOW_DAYS, run_window
from pipeline.defs.resources import PipelineResource
from pipeline.engine.checks import CHECKS, CheckOutcome, PartitionContext, reconcile, run_checks
from pipeline.engine.config import Settings, partitions_start, platforms_from_env, source_from_env
from pipeline.engine.lake.replacement import ReplacementRule
from pipeline.engine.lake.store import Lake
from pipeline.engine.lake.stream import land_stream
from pipeline.engine.lake.writes import PartitionWrite
from pipeline.engine.normalised import Normalised
from pipeline.engine.normalize.partitions.protocol import PartitionSource, SelfReporting, WindowSource
from pipeline.engine.reconciliation import price_volume
from pipeline.engine.schema import lake_tables
from pipeline.engine.service_figures import ServiceFigures
from pipeline.engine.sources.coverage import Coverage
from pipeline.engine.sources.factory import api_pool
from pipeline.engine.spool.window import Window, WindowSweeps
from pipeline.engine.warehouse.views import ensure_raw_views

GROUP = "ingestion"
OWNERS = ["team:data-platform"]
PREVIEW_ROWS = 5
Landed = dg.MaterializeResult | dg.AssetCheckResult  # what an ingestion asset yields
_NON_FINITE = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}


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
        for c in lake_tables()[table].columns
    ])


def table_spec(table: str, group: str, deps: list[str] | None = None) -> dg.AssetSpec:
    """The spec of a lake table landed by a multi-asset (sports, order books, traders): its doc, group, owners and
    column schema, read from the schema module."""
    return dg.AssetSpec(table, deps=deps or [], group_name=group, owners=OWNERS, kinds={"polars", "parquet"},
                        description=lake_tables()[table].doc, metadata={"dagster/column_schema": _column_schema(table)})


def _check_specs(table: str, partitions_def: dg.PartitionsDefinition = PARTITIONS) -> list[dg.AssetCheckSpec]:
    """Checks partitioned like their asset, so the UI shows a result per (platform, day), or (league, day).

    None is a Dagster-blocking check: a failed one is reported (severity ERROR, with examples) and its step
    succeeds, so the partition's other tables, which read the markets partition, land in the same run. The
    registry's `Check.blocking` is enforced by the SQL models instead (pipeline.defs.sql_models.assets): they
    hold back the models that read a table whose blocking check failed in their run.

    Partitioned checks are a preview feature of Dagster 1.13, chosen deliberately: without them a check
    shows only its latest run, whichever partition that was. Its warning is silenced here alone.
    """
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=dg.PreviewWarning, message=".*AssetCheckSpec.*")
        return [
            dg.AssetCheckSpec(check.name, asset=table, description=check.description, partitions_def=partitions_def,
                              blocking=False, additional_deps=list(check.reads))
            for check in CHECKS[table]
        ]


def ingestion_asset(table: str, deps: list[str] | None = None) -> Any:
    """The decorator of a table's ingestion asset: partitioned by platform and day, in the source's pool, with
    the table's schema as column metadata and its registered checks (pipeline.engine.checks) as check specs.
    The tables its checks read (`Check.reads`: the trades reconciliation reads the day's price history) are deps
    too, so that a run landing both lands them first, whatever order its steps would otherwise take.
    The decorated function lands the partition with `land_partition` or `land_partition_stream`."""
    read_by_checks = sorted({read for check in CHECKS[table] for read in check.reads})
    return dg.asset(
        name=table,
        partitions_def=PARTITIONS,
        deps=[*(deps or []), *read_by_checks],
        group_name=GROUP,
        owners=OWNERS,
        kinds={"polars", "parquet"},
        pool=api_pool(source_from_env()),
        description=lake_tables()[table].doc,
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


def land_partition(context: dg.AssetExecutionContext, pipeline: PipelineResource, table: str, platform: str, day: date,
          result: Normalised, source: PartitionSource, market_ids: frozenset[str],
          markets: pl.DataFrame | None = None) -> Iterator[Landed]:
    """Write the partition (unless the replacement rule refuses it), refresh the catalogue views, run the checks
    and the reconciliations (against the partition's `markets` and what the service said), and say what
    happened."""
    settings = pipeline.settings()
    lake = Lake.of(settings, settings.keep_versions)
    approve = ReplacementRule.of(settings).approver(table, platform, day)
    written = lake.write_partition(table, platform, day, result.rows, result.rejects, approve)
    ensure_raw_views(settings.warehouse_path, lake)
    figures = _figures(source, table)
    ctx = PartitionContext(platform, day, market_ids, markets=markets, figures=figures)
    outcomes = run_checks(table, result.rows, ctx, result.rejects) + reconcile(table, result.rows, ctx)
    yield from _result(context, settings, written, outcomes, result.rows, source, _figures_metadata(figures))


def _figures(source: PartitionSource, table: str) -> ServiceFigures | None:
    """What the service said about the partition's answers, from a source that keeps it."""
    return source.figures(table) if isinstance(source, SelfReporting) else None


def _figures_metadata(figures: ServiceFigures | None) -> dict[str, Any]:
    """The service's own figures, as the partition's metadata: its answers' cache and freshness, its lists'
    totals against the items listed, the price-history points it counted, the sports platforms' errors."""
    if figures is None:
        return {}
    shown = figures.meta.as_metadata()
    if len(figures.lists) == 1:  # a catalogue list
        shown["service_listing"] = {name: walked.as_json() for name, walked in figures.lists.items()}
    elif figures.lists:  # a walk per market: summed up
        walks = figures.lists.values()
        shown["service_listing"] = {"walks": len(walks), "listed": sum(w.listed for w in walks),
                                    "ended_by_server": sum(w.ended_by_server for w in walks),
                                    "with_total": sum(bool(w.totals) for w in walks)}
    if figures.platform_errors is not None:
        shown["service_platform_errors"] = figures.platform_errors
    if figures.price_answers:
        counted = [a.total_points for a in figures.price_answers if a.total_points is not None]
        shown["service_price_answers"] = {"answers": len(figures.price_answers),
                                          "points": sum(a.points for a in figures.price_answers),
                                          "total_points": sum(counted) if counted else None}
    return shown


def land_partition_stream(context: dg.AssetExecutionContext, pipeline: PipelineResource, table: str, platform: str,
                 day: date, chunks: Iterable[Normalised], source: PartitionSource,
                 market_ids: frozenset[str], window: Window | None = None,
                 coverage: Coverage | None = None, markets: pl.DataFrame | None = None) -> Iterator[Landed]:
    """`land_partition` for a stream of rows too long to hold: written and checked a market at a time, then
    reconciled on what landed per market. Landed from a `window`'s sweep, the metadata names the window: the
    requests of the sweep are those of the window's days together, counted by the partition that swept (as are
    the service's figures of its answers), and `coverage` is the day's (the source's covers the window)."""
    settings = pipeline.settings()
    lake = Lake.of(settings, settings.keep_versions)
    approve = ReplacementRule.of(settings).approver(table, platform, day)
    landed = land_stream(lake, table, platform, day, chunks, market_ids=market_ids, approve=approve)
    ensure_raw_views(settings.warehouse_path, lake)
    figures = _figures(source, table)
    # Trades are held against the day's price history too, once landed (in a run its step comes first: steps of one
    # level run in name order; without it, or from an earlier run of the day, the evidence is as true).
    priced = None
    if table == "trades":
        priced = price_volume(lake.read_partition_batches("price_history", platform, day, ["market_id", "volume"]))
    ctx = PartitionContext(platform, day, market_ids, markets=markets, figures=figures, price_volume=priced)
    outcomes = landed.outcomes + reconcile(table, landed.head, ctx, landed.per_market)
    about = {"window": window.tag, WINDOW_DAYS: len(window.days)} if window is not None else {}
    yield from _result(context, settings, landed.written, outcomes, landed.head, source,
                       {**about, **_figures_metadata(figures)}, coverage)


def _result(context: dg.AssetExecutionContext, settings: Settings, written: PartitionWrite,
            outcomes: list[CheckOutcome], head: pl.DataFrame, source: PartitionSource,
            about: Mapping[str, Any] | None = None, coverage: Coverage | None = None) -> Iterator[Landed]:
    """What a materialisation did, as metadata, then its checks' results."""
    requests, coverage = source.requests(), coverage if coverage is not None else source.coverage()
    if coverage.incomplete:
        context.log.warning("%s %s %s is incomplete: %d markets could not be read back to the day's start",
                            written.table, written.platform, written.day, len(coverage.incomplete))
    context.log.info("%s %s %s: %d rows, %d rejects, %d requests", written.table, written.platform, written.day,
                     written.rows, written.rejects, requests.requests)
    yield dg.MaterializeResult(
        metadata={
            "dagster/row_count": written.rows,
            "rejects": written.rejects,
            "bytes_written": written.bytes_written,
            "path": str(written.path),
            "source": settings.source.value,
            **requests.as_metadata(),
            **coverage.as_metadata(),
            **(about or {}),
            "preview": _preview(head),
        },
    )
    for outcome in outcomes:
        yield _check_result(context.asset_key, outcome)


def _check_result(asset_key: dg.AssetKey, outcome: CheckOutcome) -> dg.AssetCheckResult:
    """A check's outcome as Dagster records it: the violations and, as JSON, the first offending rows; a
    failed check that holds back the SQL models is an error, any other a warning."""
    metadata: dict[str, Any] = {"violations": outcome.violations}
    metadata.update({name: dg.MetadataValue.json(json_safe(value)) for name, value in outcome.figures.items()})
    if outcome.examples:
        metadata["examples"] = dg.MetadataValue.json(json_safe(outcome.examples))
    return dg.AssetCheckResult(
        asset_key=asset_key,
        check_name=outcome.name,
        passed=outcome.passed,
        severity=dg.AssetCheckSeverity.ERROR if outcome.blocking else dg.AssetCheckSeverity.WARN,
        description=outcome.description,
        metadata=metadata,
    )


def json_safe(value: Any) -> Any:
    """`value` made of JSON's types only, so that reporting it cannot raise.

    Check examples are rows of the table (polars `to_dicts`): times and dates become ISO 8601 text,
    decimals their exact text, NaN and infinities "NaN", "Infinity" and "-Infinity" (JSON has no such
    numbers), bytes their UTF-8 text (undecodable bytes escaped), structs and lists are converted
    item by item, and anything else becomes its `str`.
    """
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else _NON_FINITE[str(value)]
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).decode("utf-8", errors="backslashreplace")
    if isinstance(value, Mapping):
        return {str(key): json_safe(item) for key, item in value.items()}
    if isinstance(value, list | tuple | set | frozenset | pl.Series):
        return [json_safe(item) for item in value]
    return str(value)  # Decimal (exact, including NaN and Infinity), timedelta, enums, ...


def markets_partition(lake: Lake, platform: str, day: date) -> pl.DataFrame:
    """The partition's markets, each once: a market listed twice is the `unique_key` check's to report, and
    its trades and prices are asked for once."""
    frame = lake.read_partition("markets", platform, day)
    if frame is None:
        raise dg.Failure(f"markets {platform} {day} has not landed yet; materialise it first")
    return frame.unique("id", keep="first", maintain_order=True)


@ingestion_asset("markets")
def markets(context: dg.AssetExecutionContext, pipeline: PipelineResource) -> Iterator[Landed]:
    platform, day = partition_of(context)
    with pipeline.source(platform) as source:
        result = source.markets(day)
        ReplacementRule.of(pipeline.settings()).refuse_empty_listing(pipeline.lake(), platform, day,
                                                                     result.rows.height + result.rejects.height)
        ids = frozenset(result.rows["id"].to_list())
        yield from land_partition(context, pipeline, "markets", platform, day, result, source, ids)


def _catalogue_member_asset(table: str, id_column: str) -> dg.AssetsDefinition:
    """`events` or `series`: the catalogue entries that the partition's markets point at."""

    @ingestion_asset(table, deps=["markets"])
    def member(context: dg.AssetExecutionContext, pipeline: PipelineResource) -> Iterator[Landed]:
        platform, day = partition_of(context)
        market_rows = markets_partition(pipeline.lake(), platform, day)
        wanted = set(market_rows[id_column].drop_nulls().to_list())
        with pipeline.source(platform) as source:
            result = source.members(day, table, wanted)
            yield from land_partition(context, pipeline, table, platform, day, result, source, frozenset(),
                                      market_rows)

    return member


events = _catalogue_member_asset("events", "event_id")
series = _catalogue_member_asset("series", "series_id")


def _per_market_asset(table: str) -> dg.AssetsDefinition:
    """`trades` or `price_history`: read market by market, for the day alone or from its window's sweep."""

    @ingestion_asset(table, deps=["markets"])
    def per_market(context: dg.AssetExecutionContext, pipeline: PipelineResource) -> Iterator[Landed]:
        platform, day = partition_of(context)
        market_rows = markets_partition(pipeline.lake(), platform, day)
        window = run_window(context, platform, day)
        with pipeline.source(platform) as source:
            coverage = None
            if window is not None and window.first < window.last and isinstance(source, WindowSource):
                sweeps, coverage = WindowSweeps(pipeline.settings().windows_dir), Coverage()
                chunks = sweeps.day_stream(source, table, window, day, market_rows, coverage)
            else:
                window = None
                chunks = (source.trades if table == "trades" else source.price_history)(day, market_rows)
            ids = frozenset(market_rows["id"].to_list())
            yield from land_partition_stream(context, pipeline, table, platform, day, chunks, source, ids, window,
                                             coverage, market_rows)

    return per_market


trades = _per_market_asset("trades")
price_history = _per_market_asset("price_history")


INGESTION_ASSETS = [series, events, markets, trades, price_history]
