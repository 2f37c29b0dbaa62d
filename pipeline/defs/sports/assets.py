"""The sports assets, partitioned by league and day: `leagues` and `teams` (one `/league-info` answer), `futures`,
`awards`, and `future_odds` (every listed future's and award's detail).

(No `from __future__ import annotations`: Dagster reads the assets' `context` annotations live.)

A partition is the day's snapshot: the odds are live and the API keeps no history, so the daily schedule
(pipeline.defs.sports.schedule) lands each league's day on that day. Every materialisation replaces its lake
partition atomically, reports what it did as metadata and runs the table's checks (pipeline.engine.checks) in the
same step, as the ingestion assets do; a failed check is reported, never a crash.
"""

from collections.abc import Iterator
from datetime import date

import dagster as dg
import polars as pl

from pipeline.defs.ingestion.assets import (
    Landed,
    _check_result,
    _check_specs,
    _figures_metadata,
    _preview,
    table_spec,
)
from pipeline.defs.resources import PipelineResource
from pipeline.engine.checks import PartitionContext, reconcile, run_checks
from pipeline.engine.config import partitions_start, source_from_env
from pipeline.engine.lake.replacement import ReplacementRule
from pipeline.engine.lake.store import Lake
from pipeline.engine.normalised import Normalised
from pipeline.engine.schema import League, OddsKind
from pipeline.engine.service_figures import ServiceFigures
from pipeline.engine.sources.factory import api_pool
from pipeline.engine.sources.http import RequestStats
from pipeline.engine.warehouse.views import ensure_raw_views

GROUP = "sports"
OWNERS = ["team:data-platform"]

PARTITIONS = dg.MultiPartitionsDefinition({
    "date": dg.DailyPartitionsDefinition(start_date=partitions_start(), timezone="UTC"),
    "league": dg.StaticPartitionsDefinition([league.value for league in League]),
})


def league_and_day(context: dg.AssetExecutionContext) -> tuple[str, date]:
    keys = context.partition_key.keys_by_dimension  # type: ignore[union-attr]
    return keys["league"], date.fromisoformat(keys["date"])


def sports_asset(tables: list[str], deps: list[str] | None = None, name: str | None = None) -> dg.AssetsDefinition:
    """The decorator of a step landing `tables` for a (league, day): in the unified API's pool, each table with its
    schema as column metadata and its checks."""
    return dg.multi_asset(
        name=name or tables[0],
        specs=[table_spec(table, GROUP, deps) for table in tables],
        check_specs=[spec for table in tables for spec in _check_specs(table, PARTITIONS)],
        partitions_def=PARTITIONS,
        pool=api_pool(source_from_env()),
    )


def land(pipeline: PipelineResource, table: str, league: str, day: date, result: Normalised, requests: RequestStats,
         figures: ServiceFigures, team_ids: frozenset[str] = frozenset()) -> Iterator[Landed]:
    """Write the partition (unless the replacement rule refuses it), refresh the raw views, run the checks (the
    platforms' errors the answers reported among them), and say what happened: the materialisation's metadata
    (what the answers said of themselves too), then each check's result."""
    settings = pipeline.settings()
    lake = pipeline.lake()
    approve = ReplacementRule.of(settings).approver(table, league, day)
    written = lake.write_partition(table, league, day, result.rows, result.rejects, approve)
    ensure_raw_views(settings.warehouse_path, lake)
    ctx = PartitionContext(league, day, team_ids=team_ids, figures=figures)
    outcomes = run_checks(table, result.rows, ctx, result.rejects) + reconcile(table, result.rows, ctx)
    key = dg.AssetKey(table)
    yield dg.MaterializeResult(asset_key=key, metadata={
        "dagster/row_count": written.rows, "rejects": written.rejects, "bytes_written": written.bytes_written,
        "path": str(written.path), "source": settings.source.value, **requests.as_metadata(),
        **_figures_metadata(figures), "preview": _preview(result.rows),
    })
    for outcome in outcomes:
        yield _check_result(key, outcome)


def _landed(lake: Lake, table: str, league: str, day: date) -> pl.DataFrame:
    frame = lake.read_partition(table, league, day)
    if frame is None:
        raise dg.Failure(f"{table} {league} {day} has not landed yet; materialise it first")
    return frame


@sports_asset(["leagues", "teams"], name="league_info")
def league_info(context: dg.AssetExecutionContext, pipeline: PipelineResource) -> Iterator[Landed]:
    league, day = league_and_day(context)
    with pipeline.sports_source() as source:
        found = source.league(league, day)
        yield from land(pipeline, "leagues", league, day, found["leagues"], source.requests(), source.figures())
        yield from land(pipeline, "teams", league, day, found["teams"], source.requests(), source.figures())


def _listing_asset(table: str) -> dg.AssetsDefinition:
    @sports_asset([table])
    def listing(context: dg.AssetExecutionContext, pipeline: PipelineResource) -> Iterator[Landed]:
        league, day = league_and_day(context)
        with pipeline.sports_source() as source:
            listed = source.listed(table, league, day)
            yield from land(pipeline, table, league, day, listed, source.requests(), source.figures())

    return listing


futures = _listing_asset("futures")
awards = _listing_asset("awards")


@sports_asset(["future_odds"], deps=["futures", "awards", "teams"])
def future_odds(context: dg.AssetExecutionContext, pipeline: PipelineResource) -> Iterator[Landed]:
    league, day = league_and_day(context)
    lake = pipeline.lake()
    asked = {OddsKind.FUTURE: _landed(lake, "futures", league, day)["id"].unique().to_list(),
             OddsKind.AWARD: _landed(lake, "awards", league, day)["id"].unique().to_list()}
    team_ids = frozenset(_landed(lake, "teams", league, day)["router_id"].to_list())
    with pipeline.sports_source() as source:
        result = source.odds(league, day, asked)
        yield from land(pipeline, "future_odds", league, day, result, source.requests(), source.figures(), team_ids)


SPORTS_ASSETS = [league_info, futures, awards, future_odds]
