"""Each reconciliation check fails where what landed falls short of what the service says about itself, naming
the markets (or events, lists, answers) concerned with their figures; the service's figures are gathered from
its answers as they are read, and survive the catalogue cache."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import polars as pl

from pipeline.engine.checks import CHECKS, CheckOutcome, PartitionContext, reconcile
from pipeline.engine.normalize.partitions.sports import SportsSource
from pipeline.engine.normalize.partitions.unified import UnifiedPartitions
from pipeline.engine.schema import OddsKind
from pipeline.engine.service_figures import AnswerMeta, ListFigures, PriceAnswer, ServiceFigures
from pipeline.engine.sources.http import HttpLayer
from pipeline.engine.sources.sports import SportsAnswers
from pipeline.engine.sources.unified import CatalogueCache, UnifiedSource
from tests.support.frames import table_frame

PLATFORM, DAY = "kalshi", date(2026, 11, 20)
START = datetime(2026, 11, 20, tzinfo=UTC)
END = START + timedelta(days=1)


def _markets(**columns: list[Any]) -> pl.DataFrame:
    n = len(columns["id"])
    return table_frame("markets", PLATFORM, DAY, n, {"last_synced_at": [END] * n, **columns})


def _outcome(table: str, name: str, rows: pl.DataFrame, ctx: PartitionContext,
             per_market: pl.DataFrame | None = None) -> CheckOutcome:
    assert name in {c.name for c in CHECKS[table] if c.reconciles}
    return next(o for o in reconcile(table, rows, ctx, per_market) if o.name == name)


def _failed(result: CheckOutcome, concerned: list[str]) -> None:
    """Failed, blocking, naming exactly `concerned`, in its figures and its description."""
    assert not result.passed and result.blocking and result.violations == len(concerned)
    assert result.figures["concerned"] == concerned
    assert all(name in result.description for name in concerned)


def test_a_market_whose_event_or_series_did_not_land_is_named() -> None:
    markets = _markets(id=["m1", "m2", "m3", "m4"], event_id=["e1", "pe2", "e9", None],
                       series_id=["s1", "s1", "ps2", "s9"])
    events = table_frame("events", PLATFORM, DAY, 2, {"id": ["e1", "e2"], "platform_id": ["pe1", "pe2"]})
    series = table_frame("series", PLATFORM, DAY, 2, {"id": ["s1", "s2"], "platform_id": ["s1", "ps2"]})
    ctx = PartitionContext(PLATFORM, DAY, markets=markets)
    result = _outcome("events", "markets_events_landed", events, ctx)
    _failed(result, ["m3"])  # m2 names e2 by its platform id; m4 names none
    assert result.examples == [{"market_id": "m3", "event_id": "e9"}]
    _failed(_outcome("series", "markets_series_landed", series, ctx), ["m4"])
    by_slug = series.with_columns(slug=pl.Series(["s1", "s9"]))  # m4 names s2 by its slug (Polymarket `seriesSlug`)
    assert _outcome("series", "markets_series_landed", by_slug, ctx).passed
    assert _outcome("events", "markets_events_landed", events, PartitionContext(PLATFORM, DAY)).passed  # no evidence


def test_an_event_counting_more_markets_than_were_listed_for_it_is_named_but_multivariate_ones_are_excused() -> None:
    events = table_frame("events", PLATFORM, DAY, 5, {
        "id": ["e1", "e2", "KXMVESPORTS-1", "e4", "e5"], "platform_id": ["e1", "pe2", "KXMVESPORTS-1", "e4", "e5"],
        "market_count": [3.0, 2.0, 5.0, 2.5, None]})
    listed = pl.DataFrame({"event_id": ["e1", "pe2", "e4", "e5"], "listed": [2, 2, 1, 7]})
    ctx = PartitionContext(PLATFORM, DAY, figures=ServiceFigures(listed_per_event=listed))
    result = _outcome("events", "market_count_listed", events, ctx)
    _failed(result, ["e1"])
    assert result.examples == [{"event_id": "e1", "market_count": 3.0, "listed": 2}]
    assert {e["event_id"]: e["excused"].split(":")[0] for e in result.figures["excused"]} == {
        "KXMVESPORTS-1": "multivariate (MVE)", "e4": "placeholder"}


def test_a_listing_that_ended_short_of_its_constant_total_fails_and_no_other_does() -> None:
    def outcome(walked: ListFigures) -> CheckOutcome:
        ctx = PartitionContext(PLATFORM, DAY, figures=ServiceFigures(lists={"markets": walked}))
        return _outcome("markets", "markets_listing_complete", pl.DataFrame(), ctx)

    result = outcome(ListFigures(totals=[10], listed=8, ended_by_server=True))
    _failed(result, ["GET /markets?platform=kalshi"])
    assert result.examples == [{"list": "GET /markets?platform=kalshi", "total": 10, "listed": 8}]
    assert outcome(ListFigures(totals=[10], listed=12, ended_by_server=True)).passed  # a total too low loses nothing
    assert outcome(ListFigures(totals=[10, 9], listed=8, ended_by_server=True)).passed  # the list changed meanwhile
    assert outcome(ListFigures(totals=[10], listed=8, ended_by_server=False)).passed  # stopped by the pipeline
    assert outcome(ListFigures(totals=[], listed=8, ended_by_server=True)).passed  # no total given


def test_list_figures_read_the_pages_totals_and_where_the_server_ended() -> None:
    walked = ListFigures()
    walked.page({"pagination": {"total": 5, "has_more": True, "next_cursor": "c"}}, 3)
    walked.page({"pagination": {"total": 5, "has_more": True, "next_cursor": None}}, 1)
    assert walked == ListFigures(totals=[5], listed=4, ended_by_server=True)
    walked.page({"pagination": {"total": "5", "has_more": True, "next_cursor": "d"}}, 0)
    assert walked == ListFigures(totals=[5], listed=4, ended_by_server=False)


def _trades_of(**landed: tuple[int, float, float]) -> pl.DataFrame:
    return pl.DataFrame([{"market_id": m, "rows": r, "size": s, "notional": n} for m, (r, s, n) in landed.items()],
                        schema={"market_id": pl.String(), "rows": pl.UInt32(), "size": pl.Float64(),
                                "notional": pl.Float64()})


def _last_trade(at: datetime) -> list[dict[str, Any]]:
    return [{"key": "yes", "price": 0.5, "timestamp": at, "size": 1.0}]


def test_a_market_that_traded_on_the_day_by_its_record_or_its_prices_without_trades_landed_is_named() -> None:
    markets = _markets(
        id=["m1", "m2", "m3", "m4", "m5", "m6", "m7"],
        last_trades=[_last_trade(START + timedelta(hours=5)), None, None, _last_trade(START),
                     _last_trade(START - timedelta(hours=1)), None, None],
        volume_24h=[None, 12.0, 30.0, 1.0, 0.0, None, None],
        last_synced_at=[END - timedelta(hours=3), END, END + timedelta(hours=1), END, END + timedelta(days=2),
                        START, START])
    priced = pl.DataFrame({"market_id": ["m6", "m7"], "volume": [3.5, 0.0]})
    ctx = PartitionContext(PLATFORM, DAY, markets=markets, price_volume=priced)
    result = _outcome("trades", "traded_markets_have_trades", pl.DataFrame(), ctx, _trades_of(m4=(3, 3.0, 1.0)))
    # m1 traded at 05:00 (its record, though synced before the day's end, says so), m2 has a volume on a record of
    # the day's end, m6 a volume in the day's price history (its stale record says nothing); m3's volume is of a
    # later 24 hours, m4 has trades, m5 last traded before the day, m7's prices show no volume
    _failed(result, ["m1", "m2", "m6"])
    assert result.examples[1:] == [
        {"market_id": "m2", "last_trade_in_day": None, "volume_24h": 12.0, "last_synced_at": END,
         "price_volume": None},
        {"market_id": "m6", "last_trade_in_day": None, "volume_24h": None, "last_synced_at": START,
         "price_volume": 3.5}]


def test_a_market_whose_trades_add_up_to_less_than_its_volume_of_the_day_is_named_with_the_shortfall() -> None:
    markets = _markets(id=["m1", "m2", "m3", "m4"], volume_24h=[100.0, 100.0, None, 100.0],
                       volume_24h_contracts=[None, None, 50.0, None],
                       last_synced_at=[END, END, END, END + timedelta(hours=1)])
    landed = _trades_of(m1=(4, 80.0, 60.0), m2=(9, 150.0, 99.95), m3=(2, 20.0, 9.0))
    ctx = PartitionContext(PLATFORM, DAY, markets=markets)
    result = _outcome("trades", "volume_matches_trades", pl.DataFrame(), ctx, landed)
    _failed(result, ["m1", "m3"])  # m2 within rounding; m4's 24 hours are not the day
    assert result.examples == [
        {"market_id": "m1", "volume_24h": 100.0, "unit": "notional", "landed": 60.0, "shortfall": 40.0},
        {"market_id": "m3", "volume_24h": 50.0, "unit": "contracts", "landed": 20.0, "shortfall": 30.0}]


def test_a_price_answer_holding_fewer_points_than_it_counted_is_named_and_a_shorter_range_alone_is_not() -> None:
    answers = [PriceAnswer(("m1", "m2"), 0, 100, 8, 10, 0, 100), PriceAnswer(("m3",), 0, 100, 5, 5, 0, 40),
               PriceAnswer(("m4",), 0, 100, 5, 5, 0, 100), PriceAnswer(("m5",), 0, 100, 5, None, None, None)]
    ctx = PartitionContext(PLATFORM, DAY, figures=ServiceFigures(price_answers=answers))
    landed = _trades_of(m1=(6, 0.0, 0.0), m3=(5, 0.0, 0.0))
    result = _outcome("price_history", "price_points_answered", pl.DataFrame(), ctx, landed)
    _failed(result, ["m1,m2"])  # m3's range of 0-40 may be the span of its points: the spec does not say
    assert result.examples[0] == {"market_ids": "m1,m2", "start": 0, "end": 100, "points": 8, "total_points": 10,
                                  "range_start": 0, "range_end": 100, "landed_in_day": 6}


def test_the_service_figures_are_gathered_from_the_answers_and_kept_by_the_catalogue_cache(tmp_path: Path) -> None:
    pages = {None: (["m1", "m2"], "c1"), "c1": (["m2", "m3"], None)}  # m2 repeated: listed once

    def answer(request: httpx.Request) -> httpx.Response:
        name = request.url.path.strip("/")
        ids, cursor = pages[request.url.params.get("cursor")] if name == "markets" else ([], None)
        items = [{"id": i, "event_id": "e1" if i != "m3" else "pe2"} for i in ids]
        return httpx.Response(200, json={
            name: items, "pagination": {"total": 3, "has_more": cursor is not None, "next_cursor": cursor},
            "meta": {"cache_hit": cursor is None, "data_freshness": f"2026-11-21T00:0{len(ids)}:00Z"}})

    def figures(table: str) -> ServiceFigures:
        http = HttpLayer("http://api.test", transport=httpx.MockTransport(answer), max_attempts=1)
        source = UnifiedSource(http, CatalogueCache(tmp_path / "catalogue", ttl_s=60), "api:test")
        return UnifiedPartitions(source, PLATFORM, "api").figures(table)

    for _ in range(2):  # listed, then read from the cache
        markets = figures("markets")
        assert markets.lists == {"markets": ListFigures(totals=[3], listed=3, ended_by_server=True)}
        assert markets.meta == AnswerMeta(1, 1, {"2026-11-21T00:02:00Z"})
        assert markets.meta.as_metadata() == {
            "service_cache_hits": {"hit": 1, "miss": 1},
            "service_data_freshness": {"oldest": "2026-11-21T00:02:00Z", "newest": "2026-11-21T00:02:00Z",
                                       "values": 1}}
        events = figures("events")
        assert events.listed_per_event is not None
        assert dict(events.listed_per_event.iter_rows()) == {"e1": 2, "pe2": 1}


def test_platform_errors_of_the_sports_answers_are_kept_and_warned_about() -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        errors: Any = {"novig": "timeout"} if request.url.path == "/list-futures" else [{"platform": "sxbet"}]
        return httpx.Response(200, json={"data": {"futures": [], "id": "x"}, "meta": {
            "platform_errors": errors, "data_freshness": "2026-11-21T00:00:00Z"}})

    source = SportsSource(SportsAnswers(HttpLayer("http://api.test", transport=httpx.MockTransport(answer),
                                                max_attempts=1)), "api")
    source.listed("futures", "nfl", DAY)
    source.odds("nfl", DAY, {OddsKind.FUTURE: ["f1"]})
    figures = source.figures()
    assert figures.platform_errors == {"novig": "timeout", "sxbet": "{'platform': 'sxbet'}"}
    ctx = PartitionContext("nfl", DAY, figures=figures)
    result = _outcome("future_odds", "no_platform_errors", pl.DataFrame(), ctx)
    assert not result.passed and not result.blocking and result.figures["concerned"] == ["novig", "sxbet"]
    quiet = ServiceFigures(platform_errors={})
    assert _outcome("futures", "no_platform_errors", pl.DataFrame(), PartitionContext("nfl", DAY, figures=quiet)).passed


def test_a_market_whose_trades_walk_ended_short_of_its_total_is_named(tmp_path: Path) -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        market = request.url.params["market_id"]
        trades = [{"trade_id": f"{market}-1", "timestamp": 1_763_600_000}]
        total = {"m1": 2, "m2": 1}[market]
        return httpx.Response(200, json={"trades": trades, "pagination": {
            "total": total, "has_more": False, "next_cursor": None}})

    http = HttpLayer("http://api.test", transport=httpx.MockTransport(answer), max_attempts=1)
    source = UnifiedSource(http, None, "api:test")
    assert len(list(source.trade_pages(PLATFORM, DAY, ["m1", "m2"]))) == 2
    figures = UnifiedPartitions(source, PLATFORM, "api").figures("trades")
    result = _outcome("trades", "trades_listing_complete", pl.DataFrame(), PartitionContext(PLATFORM, DAY,
                      figures=figures), _trades_of())
    _failed(result, ["GET /trades?market_id=m1"])
    assert result.examples == [{"list": "GET /trades?market_id=m1", "total": 2, "listed": 1}]


def test_a_rerun_landing_fewer_rows_than_the_partition_held_is_a_warning_naming_before_and_after() -> None:
    rows = table_frame("markets", PLATFORM, DAY, 96, {})
    for replaced in (None, (0, 96), (96, 96), (90, 96)):
        assert _outcome("markets", "rows_kept", rows, PartitionContext(PLATFORM, DAY, replaced=replaced)).passed
    shrunk = _outcome("markets", "rows_kept", rows, PartitionContext(PLATFORM, DAY, replaced=(100, 96)))
    assert (shrunk.passed, shrunk.blocking) == (False, False)
    assert "FAILED for 1: kalshi 2026-11-20: 100 -> 96 rows (-4.0 %)" in shrunk.description
    assert shrunk.examples[0] | {} == {"partition": "kalshi 2026-11-20: 100 -> 96 rows (-4.0 %)", "rows_before": 100,
                                       "rows_after": 96, "change": "-4.0 %"}
    assert "rows_kept" not in {c.name for c in CHECKS["orderbook_snapshots"]}  # rounds add to a day
