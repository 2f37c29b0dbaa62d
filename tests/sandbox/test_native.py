"""The sandbox's Polymarket- and Kalshi-shaped endpoints: fixture shapes, paging and filters, and agreement
with the unified path once both are normalized."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, date, datetime
from typing import Any

import orjson
import polars as pl
import pytest

from pipeline.engine.normalize.native import normalize_native
from pipeline.engine.normalize.unified import normalize
from pmw_sandbox.app import SandboxApp, SandboxConfig
from pmw_sandbox.catalogue import WorldConfig
from pmw_sandbox.native_polymarket import DATA_API_MAX_OFFSET, GAMMA_MAX_OFFSET
from tests.support.paths import FIXTURES

WORLD = WorldConfig(
    seed=11,
    end=date(2026, 11, 21),
    days=3,
    series_per_platform=5,
    events_per_series=3,
    markets_per_event=2,
    trades_per_market_day=40,
)
DAY = WORLD.end_day
FETCHED = datetime(2026, 11, 22, tzinfo=UTC)
# Fields the sandbox sends that the recorded fixtures happen not to carry (documented in docs/schema.md
# or read by the normalizers): Gamma's status and type fields, Kalshi's fixed-point counts.
GAMMA_MARKET_EXTRAS = {"category", "closedTime", "marketType", "umaResolutionStatus", "lowerBound", "upperBound"}
GAMMA_EVENT_EXTRAS = {"category", "series"}
KALSHI_COUNT_EXTRAS = {"volume_fp", "volume_24h_fp", "open_interest_fp", "count_fp"}
# Fields of Kalshi's Market and Trade schemas that the recordings do not carry (no strike, nothing settled, trades
# recorded before the new side fields).
KALSHI_SCHEMA_EXTRAS = {"floor_strike", "cap_strike", "settlement_ts", "settlement_value", "settlement_value_dollars",
                        "taker_outcome_side", "taker_book_side", "is_block_trade"}
KALSHI_MVE_ONLY = {"mve_collection_ticker", "mve_selected_legs", "custom_strike", "strike_type"}


@pytest.fixture(scope="module")
def app() -> SandboxApp:
    return SandboxApp(SandboxConfig(world=WORLD))


def get(app: SandboxApp, path: str, key: str | None = None, **query: str) -> tuple[int, Any]:
    headers = {"X-API-Key": key} if key else {}
    response = app.handle("GET", path, list(query.items()), headers)
    return response.status, response.json()


def ok(app: SandboxApp, path: str, **query: str) -> Any:
    status, body = get(app, path, **query)
    assert status == 200, body
    return body


def fixture(name: str) -> Any:
    body = json.loads((FIXTURES / name).read_text())
    return body["response"] if isinstance(body, dict) and "response" in body else body


def keys(records: list[dict[str, Any]]) -> set[str]:
    return {k for r in records for k in r}


# -- shapes ------------------------------------------------------------------------------------------------


def test_gamma_markets_events_series_have_the_fixture_fields(app: SandboxApp) -> None:
    markets = ok(app, "/polymarket/gamma/markets", limit="50")
    names = ("gamma_market", "gamma_market_closed_binary_accepting_true", "gamma_market_sports_market_money_line")
    recorded = [fixture(f"polymarket/{n}.json") for n in names] + fixture("polymarket/gamma_event.json")[0]["markets"]
    assert keys(markets) - keys(recorded) <= GAMMA_MARKET_EXTRAS
    assert all(isinstance(m[k], str) for m in markets for k in ("outcomes", "outcomePrices", "clobTokenIds", "volume"))
    events = ok(app, "/polymarket/gamma/events", limit="5")
    assert keys(events) - keys(fixture("polymarket/gamma_event.json")) <= GAMMA_EVENT_EXTRAS
    series = ok(app, "/polymarket/gamma/series")
    assert {"id", "slug", "title", "events", "volume"} <= keys(series)


def test_clob_history_and_data_api_trades_have_the_fixture_fields(app: SandboxApp) -> None:
    market = ok(app, "/polymarket/gamma/markets", limit="1", closed="false")[0]
    token = orjson.loads(market["clobTokenIds"])[0]
    history = ok(app, "/polymarket/clob/prices-history", market=token, fidelity="60")
    assert history["history"] and keys(history["history"]) == {"t", "p"}
    trades = ok(app, "/polymarket/data/trades", market=market["conditionId"], limit="20")
    snake = fixture("polymarket/data_api_trades_captured_response.json")["data"]
    camel = {"".join(w.capitalize() if i else w for i, w in enumerate(k.split("_"))) for k in keys(snake)}
    assert keys(trades) <= camel | keys(fixture("polymarket/data_api_trades_response.json"))


def test_the_data_api_reports_a_match_as_its_takers_row_and_its_makers_rows(app: SandboxApp) -> None:
    """As Polymarket's Data API: `takerOnly` (true by default) gives the takers' rows; false adds each match's
    makers' rows (same transaction, moment, token and price, the other side, their sizes adding up)."""
    market = ok(app, "/polymarket/gamma/markets", limit="1", closed="false")[0]
    every = pl.DataFrame(ok(app, "/polymarket/data/trades", market=market["conditionId"], limit="10000",
                            takerOnly="false"))
    takers = pl.DataFrame(ok(app, "/polymarket/data/trades", market=market["conditionId"], limit="10000"))
    assert takers.equals(pl.DataFrame(ok(app, "/polymarket/data/trades", market=market["conditionId"],
                                         limit="10000", takerOnly="true")))
    matches = every.join(takers.select("transactionHash", taker_side="side", taker_size="size"),
                         on="transactionHash").group_by("transactionHash").agg(
        rows=pl.len(), sides=pl.col("side").n_unique(), prices=pl.col("price").n_unique(),
        moments=pl.col("timestamp").n_unique(), assets=pl.col("asset").n_unique(),
        makers_size=pl.col("size").filter(pl.col("side") != pl.col("taker_side")).sum(),
        taker_size=pl.col("taker_size").first(),
    )
    assert matches.height == takers.height == every["transactionHash"].n_unique() < every.height
    assert (matches["rows"] >= 2).all() and (matches["sides"] == 2).all()
    assert (matches.select("prices", "moments", "assets").to_numpy() == 1).all()
    assert ((matches["makers_size"] - matches["taker_size"]).abs() < 1e-6).all()


def test_gamma_and_the_data_api_serve_each_shape_of_real_answers() -> None:
    """Legacy placeholder prices, scalar payouts and bounds, labelled and grouped legs, fees, early closes,
    omitted zero volumes, anonymous traders, dead books and wrapped pages, as the normalizer reads them."""
    app = SandboxApp(SandboxConfig(world=replace(WORLD, markets_per_event=3)))  # with resolved scalar markets
    body = ok(app, "/polymarket/gamma/markets", limit="500")
    markets = _normalized_native("polymarket", "markets", body)
    closed = markets.filter(pl.col("status").is_in(["resolved", "cancelled"]))
    assert closed.filter(pl.col("current_prices").list.len() == 0).height  # ["0", "0"]: no price
    scalars = closed.filter((pl.col("market_type") == "scalar") & (pl.col("status") == "resolved"))
    assert scalars.height and scalars["lower_bound"].to_list() == [0.0] * scalars.height
    assert scalars["settlement_value"].is_between(0, 1, closed="none").all()  # a fraction, not a winner
    assert markets["outcome_label"].drop_nulls().len() and markets["neg_risk_market_id"].drop_nulls().len()
    assert markets["fee_rate"].drop_nulls().len() and set(markets["fee_type"].drop_nulls()) == {"sandbox_fees"}
    assert (closed["trading_end_at"] < closed["resolution_date"]).any()  # closed early
    assert any("volume24hr" not in m for m in body) and markets["volume_24h"].null_count() == 0
    dead = {m["id"] for m in body if (m["bestBid"], m["bestAsk"], m["spread"]) == (0, 1, 1)}  # cancelled: no orders
    quotes = markets.filter(pl.col("id").is_in(dead)).select(pl.col("metadata").struct.field("best_bid", "best_ask"))
    assert dead and quotes.height == len(dead) and quotes.null_count().row(0) == (len(dead), len(dead))
    trades = ok(app, "/polymarket/data/trades", market=body[0]["conditionId"], limit="10000", takerOnly="false")
    assert _normalized_native("polymarket", "trades", trades)["user"].null_count() > 0  # anonymous
    page = ok(app, "/polymarket/gamma/events/pagination", limit="2", offset="1")
    assert len(page["data"]) == 2 and page["pagination"]["hasMore"]
    assert _normalized_native("polymarket", "events", page)["id"].to_list() == [e["id"] for e in page["data"]]


def test_kalshi_endpoints_have_the_fixture_fields(app: SandboxApp) -> None:
    markets = ok(app, "/kalshi/markets", limit="1000", mve_filter="exclude")
    assert set(markets) == set(fixture("kalshi/markets_list_response.json"))
    recorded = keys(fixture("kalshi/markets_list_response.json")["markets"])
    assert keys(markets["markets"]) - recorded <= KALSHI_COUNT_EXTRAS | KALSHI_SCHEMA_EXTRAS
    assert recorded - keys(markets["markets"]) <= KALSHI_MVE_ONLY
    assert markets["markets"][0]["yes_bid_dollars"].count(".") == 1
    events = ok(app, "/kalshi/events", limit="3")
    assert set(events) == set(fixture("kalshi/events_list_response.json"))
    assert keys(events["events"]) == keys(fixture("kalshi/events_list_response.json")["events"])
    event = ok(app, f"/kalshi/events/{events['events'][0]['event_ticker']}")
    assert set(event) == set(fixture("kalshi/event_single_response.json"))
    series = ok(app, f"/kalshi/series/{events['events'][0]['series_ticker']}")
    assert set(series["series"]) == set(fixture("kalshi/series_single_response.json")["series"])
    ticker = markets["markets"][0]["ticker"]
    trades = ok(app, "/kalshi/markets/trades", ticker=ticker, limit="5")
    recorded_trades = keys(fixture("kalshi/trades_list_response.json")["trades"])
    assert keys(trades["trades"]) - recorded_trades <= KALSHI_COUNT_EXTRAS | KALSHI_SCHEMA_EXTRAS
    candles = ok(app, f"/kalshi/series/{series['series']['ticker']}/markets/{ticker}/candlesticks", **_all_day(60))
    recorded_candles = fixture("kalshi/series_candlesticks_response.json")
    assert set(candles) == set(recorded_candles)
    assert keys(candles["candlesticks"]) - keys(recorded_candles["candlesticks"]) <= KALSHI_COUNT_EXTRAS
    assert any(c["price"]["close"] is None for c in candles["candlesticks"])


def test_kalshi_markets_events_and_trades_carry_what_their_fields_mean(app: SandboxApp) -> None:
    """Issue 22's shapes, from the world: legs of mutually exclusive events named by `yes_sub_title`, strikes,
    settled scalars, fees, the deprecated liquidity and `taker_side` (historical tier only)."""
    markets = _walk(app, "/kalshi/markets", "markets", limit="1000", mve_filter="exclude")
    markets += _walk(app, "/kalshi/historical/markets", "markets", limit="1000", mve_filter="exclude")
    events = {e["event_ticker"]: e for e in _walk(app, "/kalshi/events", "events", limit="200")}
    exclusive = [m for m in markets if events[m["event_ticker"]]["mutually_exclusive"]]
    assert exclusive and all(m["yes_sub_title"] not in ("Yes", "") for m in exclusive)
    brackets = [m for m in markets if m.get("strike_type") == "between" and m["market_type"] == "binary"]
    assert brackets and all(m["floor_strike"] < m["cap_strike"] for m in brackets)
    scalars = [m for m in markets if m["result"] == "scalar"]
    assert scalars and all(m["settlement_value_dollars"] and m["expiration_value"] and m["settlement_ts"]
                           for m in scalars)
    assert {m["liquidity_dollars"] for m in markets} == {"0.0000"}
    settled = [m for m in markets if m["status"] == "finalized"]  # its book emptied: no quote on either side
    assert settled and {(m["yes_bid"], m["yes_ask"], m["no_bid"], m["no_ask"]) for m in settled} == {(0, 0, 100, 100)}
    books = _normalized_native("kalshi", "markets", {"markets": settled})["current_prices"].explode()
    assert books.struct.field("bid").null_count() == books.struct.field("ask").null_count() == books.len()
    fees = {(s["fee_type"], s["fee_multiplier"]) for s in ok(app, "/kalshi/series")["series"]}
    assert len(fees) > 1
    ticker = next(m["ticker"] for m in markets if ok(app, "/kalshi/historical/trades", ticker=m["ticker"])["trades"])
    old = ok(app, "/kalshi/historical/trades", ticker=ticker)["trades"]
    assert all(t["taker_side"] == t["taker_outcome_side"] for t in old)
    new = ok(app, "/kalshi/markets/trades", ticker=ticker, limit="1000")["trades"]
    assert new and not any("taker_side" in t for t in new)
    assert all((t["taker_book_side"] == "bid") == (t["taker_outcome_side"] == "yes") for t in new)


def test_kalshi_batch_candlesticks_answer_each_live_market_as_its_own_endpoint_does(app: SandboxApp) -> None:
    live = [m for m in ok(app, "/kalshi/markets", limit="1000", mve_filter="exclude")["markets"]][:3]
    old = ok(app, "/kalshi/historical/markets", limit="1")["markets"][0]
    tickers = ",".join([*(m["ticker"] for m in live), old["ticker"], "KXNOPE-1"])
    batch = ok(app, "/kalshi/markets/candlesticks", market_tickers=tickers, **_all_day(60))
    assert [entry["market_ticker"] for entry in batch["markets"]] == [m["ticker"] for m in live]
    series_of = {e["event_ticker"]: e["series_ticker"] for e in _walk(app, "/kalshi/events", "events", limit="200")}
    for market, entry in zip(live, batch["markets"], strict=True):
        path = f"/kalshi/series/{series_of[market['event_ticker']]}/markets/{market['ticker']}/candlesticks"
        assert entry["candlesticks"] == ok(app, path, **_all_day(60))["candlesticks"]
    assert get(app, "/kalshi/markets/candlesticks", market_tickers=",".join(["K"] * 101), **_all_day(60))[0] == 400
    too_many = ",".join(m["ticker"] for m in live)  # three markets' minute candles over three days
    assert get(app, "/kalshi/markets/candlesticks", market_tickers=too_many, **_all_day(1))[0] == 400


def _all_day(interval: int) -> dict[str, str]:
    start = int(WORLD.window_start.timestamp())
    return {"start_ts": str(start), "end_ts": str(int(WORLD.as_of.timestamp())), "period_interval": str(interval)}


# -- paging, filters, limits -------------------------------------------------------------------------------


def _walk(app: SandboxApp, path: str, entity: str, **query: str) -> list[dict[str, Any]]:
    records, cursor = [], ""
    while True:
        body = ok(app, path, **query, **({"cursor": cursor} if cursor else {}))
        records += body[entity]
        cursor = body["cursor"]
        if not cursor:
            return records


def test_kalshi_cursor_walk_returns_each_market_once_and_mve_filter_works(app: SandboxApp) -> None:
    walked = [m["ticker"] for m in _walk(app, "/kalshi/markets", "markets", limit="7")]
    assert len(walked) == len(set(walked))
    assert walked == [m["ticker"] for m in ok(app, "/kalshi/markets", limit="1000")["markets"]]
    mve = [t for t in walked if t.startswith("KXMVE")]
    assert mve, "without mve_filter the multivariate markets are listed, as on Kalshi"
    excluded = [m["ticker"] for m in _walk(app, "/kalshi/markets", "markets", mve_filter="exclude", limit="1000")]
    assert not set(excluded) & set(mve)
    only = [m["ticker"] for m in ok(app, "/kalshi/markets", mve_filter="only", limit="1000")["markets"]]
    assert only == mve
    assert get(app, "/kalshi/markets", limit="1001")[0] == 400


def test_kalshi_historical_cutoff_routes_old_markets_and_trades(app: SandboxApp) -> None:
    cutoff = ok(app, "/kalshi/historical/cutoff")
    cutoff_ts = int(datetime.fromisoformat(cutoff["trades_created_ts"].replace("Z", "+00:00")).timestamp())
    live = {m["ticker"] for m in ok(app, "/kalshi/markets", limit="1000")["markets"]}
    old = {m["ticker"] for m in ok(app, "/kalshi/historical/markets", limit="1000")["markets"]}
    assert old and not live & old
    assert get(app, f"/kalshi/markets/{next(iter(old))}")[0] == 404
    settled = ok(app, "/kalshi/historical/markets", limit="1")["markets"][0]
    series_of = {e["event_ticker"]: e["series_ticker"] for e in _walk(app, "/kalshi/events", "events", limit="200")}
    live_path = f"/kalshi/series/{series_of[settled['event_ticker']]}/markets/{settled['ticker']}/candlesticks"
    assert get(app, live_path, **_all_day(60))[0] == 404
    history = ok(app, f"/kalshi/historical/markets/{settled['ticker']}/candlesticks", **_all_day(60))
    assert history["ticker"] == settled["ticker"] and history["candlesticks"]
    assert get(app, f"/kalshi/historical/markets/{next(iter(live))}/candlesticks", **_all_day(60))[0] == 404
    listed = sorted(t for t in live if not t.startswith("KXMVE"))  # the unified API hides multivariate markets
    ticker = next(t for t in listed if ok(app, "/kalshi/historical/trades", ticker=t)["trades"])
    new_trades = _walk(app, "/kalshi/markets/trades", "trades", ticker=ticker, limit="50")
    old_trades = _walk(app, "/kalshi/historical/trades", "trades", ticker=ticker, limit="50")
    assert all(_unix(t["created_time"]) >= cutoff_ts for t in new_trades)
    assert all(_unix(t["created_time"]) < cutoff_ts for t in old_trades)
    unified = _unified_trades(app, ticker)
    assert len(new_trades) + len(old_trades) == len(unified)


def _unix(text: str) -> int:
    return int(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp())


def test_gamma_offset_paging_filters_and_deep_offset(app: SandboxApp) -> None:
    every = ok(app, "/polymarket/gamma/markets", limit="500")
    pages = [
        m["id"] for o in range(0, len(every), 4) for m in ok(app, "/polymarket/gamma/markets", limit="4", offset=str(o))
    ]
    assert pages == [m["id"] for m in every]
    closed = ok(app, "/polymarket/gamma/markets", closed="true", limit="500")
    assert closed and all(m["closed"] for m in closed)
    ids = [every[0]["id"], every[2]["id"]]
    assert [m["id"] for m in ok(app, "/polymarket/gamma/markets", id=ids[0])] == ids[:1]
    both = app.handle("GET", "/polymarket/gamma/markets", [("id", ids[0]), ("id", ids[1])], {}).json()
    assert [m["id"] for m in both] == ids
    by_condition = ok(app, "/polymarket/gamma/markets", condition_ids=every[1]["conditionId"])
    assert [m["id"] for m in by_condition] == [every[1]["id"]]
    late = ok(app, "/polymarket/gamma/markets", end_date_min=WORLD.as_of.isoformat(), limit="500")
    assert all(m["endDate"] >= WORLD.as_of.strftime("%Y-%m-%dT%H:%M:%SZ") for m in late)
    assert get(app, "/polymarket/gamma/markets", offset=str(GAMMA_MAX_OFFSET + 1))[0] == 422


def test_data_api_offset_cap_and_no_key_needed(app: SandboxApp) -> None:
    market = ok(app, "/polymarket/gamma/markets", limit="1")[0]
    status, body = get(
        app, "/polymarket/data/trades", market=market["conditionId"], offset=str(DATA_API_MAX_OFFSET + 1)
    )
    assert status == 400 and "error" in body
    assert get(app, "/markets")[0] == 401  # the unified API still wants its key


# -- agreement with the unified path -----------------------------------------------------------------------

# Columns only one path fills (or fills differently, by design):
# - unified only: description/tags/fees/urls/price changes/last_trades/unique_traders and the like; Kalshi
#   native markets carry no series_id/event_name (only via /events); trade `taker` and `user` on Kalshi.
# - different meaning: Kalshi `volume_*` count contracts natively, dollars in the unified API; trade `side` is
#   always `buy` natively on Kalshi (the taker's order); Polymarket trade ids are `{hash}-{asset}-{n}`
#   natively, `{hash}-{k}` in the unified API; a cancelled Polymarket market has 50-50 `outcomePrices` and a
#   `closedTime` (so current_prices differ); Kalshi candles price only the Yes side and have
#   a null price in periods without trades; scalar Kalshi markets are Yes/No natively, Long/Short unified;
#   a closed Polymarket market ends trading at its `closedTime` natively (when its trading stopped: Gamma gives no
#   resolution time, so resolved_at is that moment too), at its scheduled end unified;
#   the unified trades hold the makers' rows of each Polymarket match beside the taker's (the Data API too,
#   when asked `takerOnly=false`).
MARKET_COLUMNS = ["id", "platform_id", "event_id", "title", "status", "market_type", "trading_end_at"]


def _normalized_native(platform: str, entity: str, body: Any, **context: str) -> pl.DataFrame:
    result = normalize_native(platform, entity, body, day=DAY, fetched_at=FETCHED, context=context)
    for table, normalized in result.items():
        assert normalized.rejects.is_empty(), (table, normalized.rejects.to_dicts())
    return result["price_history" if entity == "price_history" else entity].rows


def _normalized_unified(table: str, records: list[dict[str, Any]], platform: str) -> pl.DataFrame:
    result = normalize(table, records, platform=platform, day=DAY, source="unified", fetched_at=FETCHED)
    assert result.rejects.is_empty(), result.rejects.to_dicts()
    return result.rows


def _unified_markets(app: SandboxApp, platform: str) -> list[dict[str, Any]]:
    return ok(app, "/markets", key="sandbox-key", platform=platform, limit="250")["markets"]


def _unified_trades(app: SandboxApp, market_id: str) -> list[dict[str, Any]]:
    return ok(app, "/trades", key="sandbox-key", market_id=market_id, limit="1000")["trades"]


def _unified_closes(app: SandboxApp, market_id: str, outcome: str) -> dict[Any, float]:
    query = {"market_ids": market_id, "interval": "60"} | {
        k: v for k, v in _all_day(60).items() if k != "period_interval"
    }
    points = ok(app, "/price-history", key="sandbox-key", **query)["data"]
    rows = _normalized_unified("price_history", points, points[0]["platform"])
    rows = rows.filter(pl.col("outcome_id") == outcome)
    return dict(zip(rows["timestamp"].to_list(), rows["price"].struct.field("close").to_list(), strict=True))


def _sorted(frame: pl.DataFrame, columns: list[str]) -> list[tuple[Any, ...]]:
    return sorted(frame.select(columns).rows())


def test_polymarket_native_agrees_with_unified(app: SandboxApp) -> None:
    native = _normalized_native("polymarket", "markets", ok(app, "/polymarket/gamma/markets", limit="500"))
    native = native.with_columns(trading_end_at=pl.col("resolution_date"))  # the scheduled close, not closedTime
    unified = _normalized_unified("markets", _unified_markets(app, "polymarket"), "polymarket")
    assert _sorted(native, [*MARKET_COLUMNS, "series_id", "event_slug"]) == _sorted(
        unified, [*MARKET_COLUMNS, "series_id", "event_slug"]
    )
    assert set(native["status"]) == {"open", "paused", "resolved", "cancelled"}
    events = _normalized_native("polymarket", "events", ok(app, "/polymarket/gamma/events", limit="500"))
    assert events.height == len(ok(app, "/events", key="sandbox-key", platform="polymarket", limit="100")["events"])
    for market in _unified_markets(app, "polymarket")[:3]:
        body = ok(app, "/polymarket/data/trades", market=market["platform_id"], limit="1000", takerOnly="false")
        trades = _normalized_native("polymarket", "trades", body, market_id=market["id"])
        expected = _normalized_unified("trades", _unified_trades(app, market["id"]), "polymarket")
        columns = ["market_id", "price", "size", "timestamp", "outcome", "side", "transaction_hash"]
        assert trades.height and _sorted(trades, columns) == _sorted(expected, columns)
        token = market["outcomes"][0]["id"]
        history = ok(app, "/polymarket/clob/prices-history", market=token, fidelity="60", **_window())
        points = _normalized_native("polymarket", "price_history", history, market_id=market["id"], outcome_id=token)
        closes = dict(zip(points["timestamp"].to_list(), points["price"].struct.field("close").to_list(), strict=True))
        assert closes and closes == _unified_closes(app, market["id"], token)


def _window() -> dict[str, str]:
    return {"startTs": str(int(WORLD.window_start.timestamp())), "endTs": str(int(WORLD.as_of.timestamp()))}


def test_kalshi_native_agrees_with_unified(app: SandboxApp) -> None:
    body = ok(app, "/kalshi/markets", limit="1000", mve_filter="exclude")
    old = ok(app, "/kalshi/historical/markets", limit="1000", mve_filter="exclude")
    native = pl.concat([_normalized_native("kalshi", "markets", b) for b in (body, old)])
    unified = _normalized_unified("markets", _unified_markets(app, "kalshi"), "kalshi")
    assert _sorted(native, MARKET_COLUMNS) == _sorted(unified, MARKET_COLUMNS)
    assert set(native["status"]) == {"open", "paused", "resolved", "cancelled"}
    yes_price = pl.col("current_prices").list.first().struct.field("price")
    assert _sorted(native.select("id", yes_price), ["id", "price"]) == _sorted(
        unified.select("id", yes_price), ["id", "price"]
    )
    for market in [m for m in _unified_markets(app, "kalshi") if m["market_type"] == "binary"][:3]:
        ticker = market["id"]
        pages = [
            _normalized_native("kalshi", "trades", {"trades": _walk(app, path, "trades", ticker=ticker, limit="100")})
            for path in ("/kalshi/markets/trades", "/kalshi/historical/trades")
        ]
        trades = pl.concat(pages)
        expected = _normalized_unified("trades", _unified_trades(app, ticker), "kalshi")
        columns = ["trade_id", "market_id", "price", "size", "timestamp", "outcome"]
        assert trades.height and _sorted(trades, columns) == _sorted(expected, columns)
        path = f"/kalshi/series/{market['series_id']}/markets/{ticker}/candlesticks"
        candles = _normalized_native("kalshi", "price_history", ok(app, path, **_all_day(60)), period_interval="60")
        traded = candles.filter(pl.col("volume") > 0)
        closes = dict(zip(traded["timestamp"].to_list(), traded["price"].struct.field("close").to_list(), strict=True))
        unified_closes = _unified_closes(app, ticker, "yes")
        assert closes and all(unified_closes[t] == c for t, c in closes.items())
        # a minute without trades closes at the last traded minute's close (Kalshi's `price.previous`)
        minutes = _normalized_native("kalshi", "price_history", ok(app, path, **_all_day(1)), period_interval="1")
        carried = minutes.sort("timestamp").with_columns(
            last=pl.when(pl.col("volume") > 0).then(pl.col("price").struct.field("close")).forward_fill().shift(1))
        quiet = carried.filter((pl.col("volume") == 0) & pl.col("last").is_not_null())
        assert quiet.height and (quiet["price"].struct.field("close") == quiet["last"]).all()
