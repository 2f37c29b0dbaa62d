"""The direct sources' own rules, on hand-made answers: paging limits, the Data API's offset cap, routing, and
what the settings accept."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, date, datetime
from typing import Any

import httpx
import orjson
import polars as pl
import pytest

from pipeline.engine.config import ConfigError, Settings
from pipeline.engine.normalize.pages import concatenated, normalize_page
from pipeline.engine.normalize.partitions.kalshi import KalshiPartitions
from pipeline.engine.normalize.partitions.polymarket import PolymarketPartitions
from pipeline.engine.normalize.partitions.sessions import open_source
from pipeline.engine.normalized import CONFLICTING_REPEAT, MarketsDone, Normalized
from pipeline.engine.sources.http import ApiError, HttpLayer
from pipeline.engine.sources.kalshi import KalshiPages
from pipeline.engine.sources.polymarket import DATA_API_OFFSET_CAP, DATA_PAGE, PolymarketPages
from pipeline.engine.sources.unified import day_bounds
from tests.support.native_cases import load

DAY = date(2026, 11, 21)
DAY_START, DAY_END = day_bounds(DAY)


def layer(answer: Callable[[httpx.Request], httpx.Response], seen: list[httpx.Request] | None = None) -> HttpLayer:
    def handle(request: httpx.Request) -> httpx.Response:
        if seen is not None:
            seen.append(request)
        return answer(request)

    return HttpLayer("http://platform.test", transport=httpx.MockTransport(handle), max_attempts=1)


def data_api_trade(n: int, timestamp: int) -> dict[str, Any]:
    return {"proxyWallet": "0xabc", "side": "BUY", "asset": "111", "conditionId": "0xc0", "size": 2.0,
            "price": 0.5, "timestamp": timestamp, "outcome": "Yes", "outcomeIndex": 0,
            "transactionHash": f"0x{n:064x}"}


def polymarket(data: HttpLayer) -> PolymarketPartitions:
    unused = layer(lambda request: httpx.Response(500))
    return PolymarketPartitions(PolymarketPages(gamma=unused, clob=unused, data=data))


MARKET = pl.DataFrame({"id": ["m1"], "platform_id": ["0xc0"]})


def test_a_market_deeper_than_the_data_api_pages_is_landed_as_far_as_reached_and_reported() -> None:
    def busy(request: httpx.Request) -> httpx.Response:  # every trade of the market is inside the day
        offset = int(request.url.params["offset"])
        page = [data_api_trade(offset + k, DAY_END - 1 - offset - k) for k in range(DATA_PAGE)]
        return httpx.Response(200, json=page)

    seen: list[httpx.Request] = []
    source = polymarket(layer(busy, seen))
    chunks = list(source.trades(DAY, MARKET))
    offsets = [int(r.url.params["offset"]) for r in seen]
    assert max(offsets) <= DATA_API_OFFSET_CAP and offsets == sorted(set(offsets))
    assert sum(c.rows.height for c in chunks if isinstance(c, Normalized)) == len(offsets) * DATA_PAGE
    assert chunks[-1] == MarketsDone("m1")
    coverage = source.coverage().as_metadata()
    reached = datetime.fromtimestamp(DAY_END - len(offsets) * DATA_PAGE, UTC)
    assert coverage == {"complete": False, "incomplete_markets": 1, "reached_back_to": reached.isoformat(),
                        "incomplete_examples": {"m1": reached.isoformat()}}


def test_an_offset_refused_sooner_than_documented_ends_the_market_as_incomplete() -> None:
    def capped(request: httpx.Request) -> httpx.Response:
        offset = int(request.url.params["offset"])
        if offset >= DATA_PAGE:
            return httpx.Response(400, json={"error": "max historical activity offset exceeded"})
        return httpx.Response(200, json=[data_api_trade(k, DAY_END - 1 - k) for k in range(DATA_PAGE)])

    source = polymarket(layer(capped))
    chunks = source.trades(DAY, MARKET)
    assert sum(c.rows.height for c in chunks if isinstance(c, Normalized)) == DATA_PAGE
    assert source.coverage().as_metadata()["complete"] is False


def test_a_market_read_back_past_the_day_start_is_complete_and_stops_there() -> None:
    seen: list[httpx.Request] = []
    source = polymarket(layer(lambda r: httpx.Response(200, json=[data_api_trade(1, DAY_START - 5)] * DATA_PAGE), seen))
    list(source.trades(DAY, MARKET))
    assert len(seen) == 1 and source.coverage().as_metadata() == {"complete": True}


def test_a_kalshi_cursor_that_comes_back_is_an_error_not_an_endless_loop() -> None:
    answer = {"cursor": "same", "events": []}
    source = KalshiPartitions(KalshiPages(layer(lambda request: httpx.Response(200, json=answer))))
    with pytest.raises(ApiError, match="cursor it had already given"):
        source.pages.event_pages(DAY)


def test_kalshi_days_before_the_cutoff_read_the_historical_trades_too() -> None:
    cutoff = datetime.fromtimestamp(DAY_START + 3600, UTC).isoformat()
    seen: list[httpx.Request] = []

    def kalshi(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/historical/cutoff":
            return httpx.Response(200, json={"market_settled_ts": cutoff, "trades_created_ts": cutoff})
        return httpx.Response(200, json={"cursor": "", "trades": []})

    source = KalshiPartitions(KalshiPages(layer(kalshi, seen)))
    list(source.trades(DAY, pl.DataFrame({"id": ["K-1"]})))
    paths = [r.url.path for r in seen if r.url.path != "/historical/cutoff"]
    assert paths == ["/historical/trades", "/markets/trades"]
    assert all(r.url.params["min_ts"] == str(DAY_START) and r.url.params["max_ts"] == str(DAY_END - 1)
               for r in seen if "trades" in r.url.path)


def kalshi_candles(left_out: set[str], seen: list[httpx.Request], refuse_batches: bool = False) -> KalshiPartitions:
    """A Kalshi source whose batch candlesticks answer leaves out the markets `left_out` (or, `refuse_batches`,
    answers 404), which the live tier's own endpoint does not know either (404)."""
    cutoff = datetime.fromtimestamp(DAY_START, UTC).isoformat()

    def kalshi(request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if path == "/historical/cutoff":
            return httpx.Response(200, json={"market_settled_ts": cutoff, "trades_created_ts": cutoff})
        if path == "/markets/candlesticks" and refuse_batches:
            return httpx.Response(404, json={"error": {"code": "not_found"}})
        if path == "/markets/candlesticks":
            served = [t for t in request.url.params["market_tickers"].split(",") if t not in left_out]
            return httpx.Response(200, json={"markets": [{"market_ticker": t, "candlesticks": []} for t in served]})
        if path.startswith("/series/") and path.split("/")[4] in left_out:
            return httpx.Response(404, json={"error": {"code": "not_found"}})
        return httpx.Response(200, json={"candlesticks": []})

    return KalshiPartitions(KalshiPages(layer(kalshi, seen)))


def test_kalshi_candles_of_a_batch_refused_with_404_are_asked_market_by_market() -> None:
    seen: list[httpx.Request] = []
    source = kalshi_candles({"K-1"}, seen, refuse_batches=True)
    pages = list(source.pages.candlestick_pages(DAY, candle_markets(["K-0", "K-1"])))
    asked = [r.url.path for r in seen if r.url.path != "/historical/cutoff"]
    assert asked == ["/markets/candlesticks", "/series/S/markets/K-0/candlesticks",
                     "/series/S/markets/K-1/candlesticks", "/historical/markets/K-1/candlesticks"]
    assert [page.asked_for for page in pages] == [("K-0",), ("K-1",)]


def candle_markets(ids: list[str], settled_before: frozenset[str] = frozenset()) -> pl.DataFrame:
    """Rows of the markets table as the source reads them; `settled_before` settled before the cutoff."""
    settled_at = datetime.fromtimestamp(DAY_START - 60, UTC)
    return pl.DataFrame({"id": ids, "series_id": ["S"] * len(ids),
                         "status": ["resolved" if i in settled_before else "open" for i in ids],
                         "resolved_at": [settled_at if i in settled_before else None for i in ids]})


def test_identifiers_from_the_api_cannot_change_the_path_asked_for() -> None:
    seen: list[httpx.Request] = []
    markets = candle_markets(["../../portfolio/orders?x=1"]).with_columns(series_id=pl.lit("S/../.."))
    list(kalshi_candles(set(), seen).price_history(DAY, markets))
    assert seen[-1].url.params["market_tickers"] == "../../portfolio/orders?x=1"  # a value, not a path
    list(kalshi_candles({"../../portfolio/orders?x=1"}, seen).price_history(DAY, markets))
    alone = seen[-1].url.raw_path.decode()  # left out of the batch answer: asked alone, its ticker escaped
    assert alone.startswith("/series/S%2F..%2F../markets/..%2F..%2Fportfolio%2Forders%3Fx%3D1/")


def test_kalshi_candles_are_asked_100_markets_a_request_and_alone_only_where_the_batch_cannot_answer() -> None:
    """Issue 22, point 13: 250 markets, one settled before the cutoff and one the batch answer leaves out, cost
    3 batch requests, 1 historical-tier request and 2 for the one left out (live tier 404, historical), where
    one request per market cost 251; every market's candles come in id order, each market once."""
    ids = [f"K-{n:03d}" for n in range(250)]
    seen: list[httpx.Request] = []
    source = kalshi_candles({"K-007"}, seen)
    pages = list(source.pages.candlestick_pages(DAY, candle_markets(ids, frozenset({"K-100"}))))
    asked = [r.url.path for r in seen if r.url.path != "/historical/cutoff"]
    assert asked.count("/markets/candlesticks") == 3 and len(asked) == 6
    batches = [r.url.params["market_tickers"].split(",") for r in seen if r.url.path == "/markets/candlesticks"]
    assert [len(b) for b in batches] == [100, 100, 49] and "K-100" not in batches[1]
    assert {"/historical/markets/K-100/candlesticks", "/series/S/markets/K-007/candlesticks",
            "/historical/markets/K-007/candlesticks"} <= set(asked)
    firsts = [page.asked_for[0] for page in pages]
    assert firsts == sorted(firsts)  # markets complete in id order (MarketsDone)
    assert sorted(t for page in pages for t in page.asked_for if len(page.asked_for) > 1) == sorted(set(ids))


def test_direct_reads_only_the_platforms_it_knows() -> None:
    settings = Settings.from_env({"PMW_SOURCE": "direct"})
    with pytest.raises(ConfigError, match="not 'limitless'"), open_source(settings, "limitless"):
        pass


@pytest.mark.parametrize("url", ["ftp://example.test", "example.test", "Sandbox"])
def test_a_direct_url_that_is_no_url_is_refused_by_name(url: str) -> None:
    with pytest.raises(ConfigError, match=f"PMW_DIRECT_URL must start with http:// or https://.*{url}"):
        Settings.from_env({"PMW_SOURCE": "direct", "PMW_DIRECT_URL": url})


def test_a_kalshi_trade_both_tiers_send_with_other_values_lands_once_as_first_met_and_the_other_is_rejected() -> None:
    """Recorded trades from both tiers around the cutoff: one of them the live tier sends at another price."""
    recorded, _ = load("kalshi/trades_list_response.json")
    trades = recorded["trades"]
    day = datetime.fromisoformat(trades[0]["created_time"]).date()
    changed = {**trades[0], "yes_price": 7, "yes_price_dollars": "0.0700", "no_price": 93, "no_price_dollars": "0.9300"}

    def kalshi(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/historical/cutoff":
            middle = datetime.combine(day, datetime.min.time(), UTC).replace(hour=12).isoformat()
            return httpx.Response(200, json={"market_settled_ts": middle, "trades_created_ts": middle})
        served = trades if request.url.path == "/historical/trades" else [changed, *trades[1:]]
        return httpx.Response(200, json={"cursor": "", "trades": served})

    source = KalshiPartitions(KalshiPages(layer(kalshi)))
    pages = list(source.pages.trade_pages(day, [trades[0]["ticker"]]))
    result = concatenated("trades", [normalize_page(page, source="direct") for page in pages])

    assert result.rows["trade_id"].sort().to_list() == sorted(t["trade_id"] for t in trades)
    historical = normalize_page(pages[0], source="direct").rows  # the tier read first
    assert pages[0].conflicting == [] and pages[1].conflicting == [changed]
    one = pl.col("trade_id") == trades[0]["trade_id"]
    assert result.rows.filter(one)["price"].to_list() == historical.filter(one)["price"].to_list(), "first met lands"
    assert result.rejects["reason"].to_list() == [CONFLICTING_REPEAT]
    assert orjson.loads(result.rejects["raw"][0]) == changed
    stats = source.requests()
    assert (stats.conflicting_repeats, stats.duplicates_dropped) == (1, len(trades) - 1)


def test_a_series_named_by_its_slug_is_asked_by_slug() -> None:
    """A market whose event nests no `series` names it by `seriesSlug` (issue 34): Gamma is asked by `slug`."""
    seen: list[httpx.Request] = []
    series = {"id": "10684", "slug": "counter-strike", "title": "Counter-Strike"}
    gamma = layer(lambda request: httpx.Response(200, json=[series]), seen)
    unused = layer(lambda request: httpx.Response(500))
    source = PolymarketPartitions(PolymarketPages(gamma=gamma, clob=unused, data=unused))
    rows = source.members(DAY, "series", {"10684", "counter-strike"}).rows
    assert [(r.url.path, r.url.params.get_list("id"), r.url.params.get_list("slug")) for r in seen] == [
        ("/series", ["10684"], []), ("/series", [], ["counter-strike"])]
    assert rows["id"].to_list() == ["10684"]
