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
from typing import Any

import dagster as dg
import polars as pl

from pipeline.defs.common.landing import land
from pipeline.defs.common.reporting import Landed, figures_metadata
from pipeline.defs.common.resources import PipelineResource
from pipeline.defs.common.specs import daily_partitions, partition_of, tables_asset
from pipeline.engine.checks import PartitionContext
from pipeline.engine.config import Settings
from pipeline.engine.lake.store import Lake
from pipeline.engine.normalize.partitions.sports import SportsSource
from pipeline.engine.normalized import Normalized
from pipeline.engine.schema import League, OddsKind
from pipeline.engine.sources.factory import api_pool

GROUP = "sports"

def sports_partitions(settings: Settings) -> dg.MultiPartitionsDefinition:
    """The sports tables' partitions: every league, by day from the first partition."""
    return daily_partitions(settings.first_day, "league", [league.value for league in League])


def league_and_day(context: dg.AssetExecutionContext) -> tuple[str, date]:
    return partition_of(context, "league")


def sports_asset(settings: Settings, tables: list[str], deps: list[str] | None = None,
                 name: str | None = None) -> Any:
    """The decorator of a step landing `tables` for a (league, day): in the source's pool, each table with its
    schema as column metadata and its checks."""
    return tables_asset(name or tables[0], tables, GROUP, sports_partitions(settings), api_pool(settings.source), deps)


def land_sports(pipeline: PipelineResource, table: str, league: str, day: date, result: Normalized,
                source: SportsSource, team_ids: frozenset[str] = frozenset()) -> Iterator[Landed]:
    """Land the partition (pipeline.defs.common.landing), its checks holding it against the platforms' errors the
    answers reported, with what the answers said of themselves in the metadata."""
    figures = source.figures()
    metadata = {"source": pipeline.settings().source.value, **source.requests().as_metadata(),
                **figures_metadata(figures)}
    yield from land(pipeline, table, PartitionContext(league, day, team_ids=team_ids, figures=figures), result,
                    metadata)


def _landed(lake: Lake, table: str, league: str, day: date) -> pl.DataFrame:
    frame = lake.read_partition(table, league, day)
    if frame is None:
        raise dg.Failure(f"{table} {league} {day} has not landed yet; materialise it first")
    return frame


def _league_info_asset(settings: Settings) -> dg.AssetsDefinition:
    """`leagues` and `teams`, from one `/league-info` answer."""

    @sports_asset(settings, ["leagues", "teams"], name="league_info")
    def league_info(context: dg.AssetExecutionContext, pipeline: PipelineResource) -> Iterator[Landed]:
        league, day = league_and_day(context)
        with pipeline.sports_source() as source:
            found = source.league(league, day)
            yield from land_sports(pipeline, "leagues", league, day, found["leagues"], source)
            yield from land_sports(pipeline, "teams", league, day, found["teams"], source)

    return league_info


def _listing_asset(settings: Settings, table: str) -> dg.AssetsDefinition:
    """`futures` or `awards`: the league's listing of the day."""

    @sports_asset(settings, [table])
    def listing(context: dg.AssetExecutionContext, pipeline: PipelineResource) -> Iterator[Landed]:
        league, day = league_and_day(context)
        with pipeline.sports_source() as source:
            listed = source.listed(table, league, day)
            yield from land_sports(pipeline, table, league, day, listed, source)

    return listing


def _future_odds_asset(settings: Settings) -> dg.AssetsDefinition:
    """`future_odds`: every listed future's and award's detail."""

    @sports_asset(settings, ["future_odds"], deps=["futures", "awards", "teams"])
    def future_odds(context: dg.AssetExecutionContext, pipeline: PipelineResource) -> Iterator[Landed]:
        league, day = league_and_day(context)
        lake = pipeline.lake()
        asked = {OddsKind.FUTURE: _landed(lake, "futures", league, day)["id"].unique().to_list(),
                 OddsKind.AWARD: _landed(lake, "awards", league, day)["id"].unique().to_list()}
        team_ids = frozenset(_landed(lake, "teams", league, day)["router_id"].to_list())
        with pipeline.sports_source() as source:
            result = source.odds(league, day, asked)
            yield from land_sports(pipeline, "future_odds", league, day, result, source, team_ids)

    return future_odds


def sports_assets(settings: Settings) -> list[dg.AssetsDefinition]:
    """The sports assets: league info, futures, awards and the odds, partitioned by league and day."""
    return [_league_info_asset(settings), _listing_asset(settings, "futures"), _listing_asset(settings, "awards"),
            _future_odds_asset(settings)]
