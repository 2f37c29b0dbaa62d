"""The native normalizers: recorded Polymarket and Kalshi responses become rows of the exact schemas, with
values taken from the files; hostile variants become rejects with their reasons."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import orjson
import polars as pl
import pytest

from pipeline.engine.normalize.mappings import DIRECT_MAPPINGS, KALSHI_STATUSES
from pipeline.engine.normalize.native import normalize_native
from pipeline.engine.normalized import Normalized
from pipeline.engine.schema import REJECTS_SCHEMA, TABLES, MarketStatus
from tests.support.native_cases import CALL_COLUMNS, CASES, DAY, FETCHED_AT, FIXTURES, ORDERBOOKS, Case, load


def run(platform: str, entity: str, body: Any, context: dict[str, str] | None = None) -> dict[str, Normalized]:
    return normalize_native(platform, entity, body, day=DAY, fetched_at=FETCHED_AT, context=context)


def rows_of(case_path: str, table: str, platform: str, entity: str) -> list[dict[str, Any]]:
    body, context = load(case_path)
    result = run(platform, entity, body, context)[table]
    assert result.rejects.is_empty(), result.rejects["reason"].to_list()
    return result.rows.to_dicts()


def one(platform: str, entity: str, body: Any, table: str | None = None, **context: str) -> dict[str, Any]:
    result = run(platform, entity, body, context)[table or entity]
    assert result.rejects.is_empty(), result.rejects["reason"].to_list()
    assert result.rows.height == 1
    return result.rows.row(0, named=True)


def reasons(platform: str, entity: str, body: Any, table: str | None = None, **context: str) -> list[str]:
    return run(platform, entity, body, context)[table or entity].rejects["reason"].to_list()


def utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)


# -- every fixture -----------------------------------------------------------------------------------------


def test_every_recorded_fixture_is_covered() -> None:
    # market_links/ holds catalogues for the link matcher, covered by test_market_link_fixtures
    files = {str(p.relative_to(FIXTURES)) for p in FIXTURES.rglob("*.json") if p.parent.name != "market_links"}
    assert files == {case.path for case in CASES} | set(ORDERBOOKS)


@pytest.mark.parametrize("case", CASES, ids=[c.path for c in CASES])
def test_a_fixture_normalizes_without_rejects_into_the_exact_schema(case: Case) -> None:
    body, context = load(case.path)
    results = run(case.platform, case.entity, body, context)
    assert {table: r.rows.height for table, r in results.items()} == case.rows
    for table, result in results.items():
        assert result.rejects.is_empty(), result.rejects["reason"].to_list()
        assert result.rejects.schema == REJECTS_SCHEMA
        assert result.rows.schema == TABLES[table].polars_schema
        assert result.rows.select(TABLES[table].required_columns).null_count().sum_horizontal().item() == 0
        if result.rows.height:
            lineage = result.rows.select("platform", "date", "_source", "_fetched_at").unique().rows()
            assert lineage == [(case.platform, DAY, "direct", FETCHED_AT)]


@pytest.mark.parametrize("case", CASES, ids=[c.path for c in CASES])
def test_the_columns_filled_are_those_the_mapping_tables_document(case: Case) -> None:
    body, context = load(case.path)
    for table, result in run(case.platform, case.entity, body, context).items():
        documented = {
            source.column
            for mapping in DIRECT_MAPPINGS
            if (mapping.platform, mapping.table) == (case.platform, table)
            for source in mapping.columns
        }
        assert documented <= set(TABLES[table].column_names)
        nulls = result.rows.null_count().row(0, named=True) if result.rows.height else {}
        filled = {name for name, count in nulls.items() if count < result.rows.height}
        assert filled - CALL_COLUMNS <= documented


# -- Polymarket values -------------------------------------------------------------------------------------

UP_TOKEN = "104239898038807136052399800151408521467737075933964991162589336683346093173875"
DOWN_TOKEN = "71183960810705820955071415844881728181970340514894896943812046065452395013351"


def gamma_market() -> dict[str, Any]:
    return load("polymarket/gamma_market.json")[0]


def test_an_open_gamma_market() -> None:
    row = one("polymarket", "markets", gamma_market())
    assert (row["id"], row["platform_id"]) == (
        "1557558",
        "0x78443f961b9a65869dcb39359de9960165c7e5cbad0904eac7f29cd77872a63b",
    )
    assert (row["status"], row["market_type"], row["title"]) == (
        "open",
        "binary",
        "Bitcoin Up or Down - March 12, 5:20AM-5:25AM ET",
    )
    assert row["outcomes"] == [{"id": UP_TOKEN, "name": "Up"}, {"id": DOWN_TOKEN, "name": "Down"}]
    assert len(row["outcomes"][0]["id"]) == 78 and len(row["outcomes"][1]["id"]) == 77  # token ids stay text
    assert row["current_prices"] == [
        {"key": UP_TOKEN, "price": 0.505, "bid": 0.5, "ask": 0.51},
        {"key": DOWN_TOKEN, "price": 0.495, "bid": None, "ask": None},
    ]
    assert (row["event_id"], row["event_slug"], row["series_id"]) == ("260654", "btc-updown-5m-1773307200", "10684")
    assert (row["volume_total"], row["liquidity"], row["volume_24h"]) == (9.999997, 20328.3747, 9.999997)
    assert row["created_at"] == datetime(2026, 3, 11, 9, 27, 51, 140253, tzinfo=UTC)
    assert row["trading_end_at"] == utc(2026, 3, 12, 9, 25) and row["resolved_at"] is None
    assert row["metadata"]["clob_token_ids"] == [UP_TOKEN, DOWN_TOKEN] and row["metadata"]["spread"] == 0.009
    assert row["last_synced_at"] == FETCHED_AT and row["_source"] == "direct"


def test_a_resolved_gamma_market_read_from_its_final_prices() -> None:
    market = load("polymarket/gamma_market_closed_binary_accepting_true.json")[0]
    assert "umaResolutionStatus" not in market  # resolved by `closed` and outcomePrices ["1", "0"] alone
    row = one("polymarket", "markets", market)
    assert row["status"] == "resolved"
    assert [p["price"] for p in row["current_prices"]] == [1.0, 0.0]
    assert row["resolved_at"] == utc(2026, 5, 9, 2, 7, 1)  # closedTime "2026-05-09 02:07:01+00"
    assert row["liquidity"] is None and row["volume_total"] == 192817.4904490008  # no liquidity sent
    assert row["event_id"] is None and row["resolution_source"] is None  # no nested event; "" is no value


def test_a_sports_market_resolved_by_uma() -> None:
    row = one("polymarket", "markets", load("polymarket/gamma_market_sports_market_money_line.json")[0])
    assert (row["status"], row["market_type"]) == ("resolved", "binary")
    assert [o["name"] for o in row["outcomes"]] == ["FaZe", "illwill"]
    assert row["outcomes"][1]["id"] == "90510951248295963583566830308208121966213462932425555585207203442852394431867"
    assert (row["event_id"], row["series_id"]) == ("346898", "counter-strike")  # a seriesSlug, no series
    assert row["resolution_source"] == "https://hltv.org" and row["resolved_at"] == utc(2026, 4, 5, 19, 37, 33)


def test_a_gamma_event_gives_its_row_and_its_negative_risk_markets() -> None:
    results = run("polymarket", "events", load("polymarket/gamma_event.json")[0])
    event = results["events"].rows.row(0, named=True)
    assert (event["id"], event["title"], event["market_count"]) == ("30829", "Democratic Presidential Nominee 2028", 2)
    assert event["total_volume"] == 799823812.487094 and event["resolution_source_url"] is None
    assert event["event_start_at"] == utc(2028, 11, 7, 12)  # startTime; startDate is when it was listed
    markets = results["markets"].rows
    assert markets["id"].to_list() == ["559657", "559659"]
    assert set(markets["event_id"]) == {"30829"} and set(markets["market_type"]) == {"binary"}
    assert markets["event_name"].to_list() == ["Democratic Presidential Nominee 2028"] * 2
    assert "Politics" in markets["tags"][0]
    assert markets["current_prices"][1][0]["price"] == 0.0145  # outcomePrices "[\"0.0145\", \"0.9855\"]"


def test_data_api_trades_in_the_camel_case_array() -> None:
    rows = rows_of("polymarket/data_api_trades_response.json", "trades", "polymarket", "trades")
    first = rows[0]
    tx = "0xabc123def456789012345678901234567890abcdef1234567890abcdef123456"
    asset = "71321045863084981365469005770620412523470745398083994982746259498689308907982"
    assert first["trade_id"] == f"{tx}-{asset}-0"
    assert (first["side"], first["price"], first["size"]) == ("buy", 0.55, 100.0)
    assert first["timestamp"] == utc(2024, 3, 9, 16) and first["transaction_hash"] == tx
    assert first["market_id"] == "0xc8f1cf5d4f26e0fd9c8fe89f2a7b3263b902cf14fde7bfccef525753bb492e47"
    assert first["user"] is None and first["taker"] is None
    assert orjson.loads(first["metadata"])["asset"] == asset
    assert [r["side"] for r in rows] == ["buy", "sell", "buy"]


def test_data_api_trades_in_the_snake_case_envelope() -> None:
    rows = rows_of("polymarket/data_api_trades_captured_response.json", "trades", "polymarket", "trades")
    first = rows[0]
    assert (first["side"], first["price"], first["size"], first["outcome"]) == ("sell", 0.7, 92.59, "T1")
    assert first["timestamp"] == utc(2026, 8, 8, 9, 2, 15)
    assert first["user"] == {
        "name": "Sanitized trader",
        "pseudonym": "sanitized-trader",
        "profile_image": "https://example.com/sanitized-profile.png",
    }
    assert orjson.loads(first["metadata"]) == {
        "asset": "10000000000000000000000000000000000000000000000000000000000000000000000000001",
        "condition_id": "0x" + "c" * 64,
        "outcome_index": 0,
        "proxy_wallet": "0x" + "1" * 40,
    }
    assert rows[2]["size"] == 244.0 and rows[2]["outcome"] == "Hanwha Life Esports"


def test_trades_take_the_market_id_from_the_context() -> None:
    body, _ = load("polymarket/data_api_trades_response.json")
    trades = run("polymarket", "trades", body, {"market_id": "559657"})["trades"].rows
    assert set(trades["market_id"]) == {"559657"}


def test_trade_ids_count_the_fills_of_a_transaction_and_token_in_order() -> None:
    body, _ = load("polymarket/data_api_trades_response.json")
    fills = [body[0], {**body[0], "size": 7.0}, body[2], {**body[0], "size": 9.0}]
    ids = run("polymarket", "trades", fills)["trades"].rows["trade_id"].to_list()
    first = f"{body[0]['transactionHash']}-{body[0]['asset']}"
    assert ids == [f"{first}-0", f"{first}-1", f"{body[2]['transactionHash']}-{body[2]['asset']}-0", f"{first}-2"]


def test_a_clob_price_history_needs_its_market_and_token() -> None:
    body = {"history": [{"t": 1773306000, "p": 0.505}, {"t": 1773306060, "p": 0.51}]}
    rows = run("polymarket", "price_history", body, {"market_id": "1557558", "outcome_id": UP_TOKEN})
    result = rows["price_history"]
    assert result.rejects.is_empty() and result.rows.schema == TABLES["price_history"].polars_schema
    first = result.rows.row(0, named=True)
    assert first["timestamp"] == utc(2026, 3, 12, 9, 0) and first["outcome_id"] == UP_TOKEN
    assert first["price"] == {"open": None, "high": None, "low": None, "close": 0.505}
    with pytest.raises(ValueError, match="context needs outcome_id"):
        run("polymarket", "price_history", body, {"market_id": "1557558"})


# -- Polymarket rules --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("changes", "status"),
    [
        ({}, "open"),
        ({"acceptingOrders": False}, "paused"),
        ({"active": False}, "paused"),
        ({"closed": True}, "resolved"),  # closed, mid prices, no resolution on record: over, winner unknown
        ({"closed": True, "umaResolutionStatus": "proposed"}, "resolved"),
        ({"closed": True, "umaResolutionStatus": "resolved"}, "resolved"),
        ({"closed": True, "outcomePrices": '["0", "1"]'}, "resolved"),
        ({"closed": True, "umaResolutionStatus": "resolved", "outcomePrices": '["0.5", "0.5"]'}, "cancelled"),
        ({"closed": True, "outcomePrices": '["0.5", "0.5"]'}, "cancelled"),
        ({"closed": False, "outcomePrices": '["1", "0"]'}, "open"),
    ],
)
def test_polymarket_status_rules(changes: dict[str, Any], status: str) -> None:
    assert one("polymarket", "markets", {**gamma_market(), **changes})["status"] == status


@pytest.mark.parametrize(
    ("changes", "market_type"),
    [
        ({}, "binary"),
        (
            {"outcomes": '["A", "B", "C"]', "outcomePrices": '["0.2", "0.3", "0.5"]', "clobTokenIds": None},
            "categorical",
        ),
        ({"marketType": "scalar", "outcomes": '["Long", "Short"]'}, "scalar"),
    ],
)
def test_polymarket_market_types(changes: dict[str, Any], market_type: str) -> None:
    assert one("polymarket", "markets", {**gamma_market(), **changes})["market_type"] == market_type


def test_a_gamma_market_without_tokens_names_its_outcomes_by_name_and_without_prices_has_none() -> None:
    row = one("polymarket", "markets", {**gamma_market(), "clobTokenIds": None, "outcomePrices": None})
    assert row["outcomes"] == [{"id": "Up", "name": "Up"}, {"id": "Down", "name": "Down"}]
    assert row["current_prices"] == [] and row["metadata"]["clob_token_ids"] is None


# -- Kalshi values -----------------------------------------------------------------------------------------


def test_kalshi_series() -> None:
    row = one("kalshi", "series", load("kalshi/series_single_response.json")[0])
    assert (row["id"], row["title"], row["category"], row["tags"]) == (
        "CO2",
        "US CO2 totals",
        "Climate and Weather",
        ["Climate change"],
    )


def test_kalshi_events_list() -> None:
    rows = rows_of("kalshi/events_list_response.json", "events", "kalshi", "events")
    assert [r["id"] for r in rows][:2] == ["KXELONMARS-99", "KXNEWPOPE-70"]
    assert [r["series_id"] for r in rows][:2] == ["KXELONMARS", "KXNEWPOPE"]
    assert rows[1]["title"] == "Who will the next Pope be?" and rows[0]["market_count"] is None  # none nested


def test_a_kalshi_event_with_its_market_read_from_dollar_fields() -> None:
    results = run("kalshi", "events", load("kalshi/event_single_response.json")[0])
    event = results["events"].rows.row(0, named=True)
    assert (event["id"], event["series_id"], event["market_count"]) == ("KXELONMARS-99", "KXELONMARS", 1)
    market = results["markets"].rows.row(0, named=True)
    assert (market["id"], market["status"], market["market_type"]) == ("KXELONMARS-99", "open", "binary")
    assert (market["event_name"], market["category"]) == ("Will Elon Musk visit Mars in his lifetime?", "World")
    assert market["outcomes"] == [{"id": "yes", "name": "Yes"}, {"id": "no", "name": "No"}]
    assert market["current_prices"] == [
        {"key": "yes", "price": 0.06, "bid": 0.06, "ask": 0.07},  # last_price_dollars "0.0600", yes_*_dollars
        {"key": "no", "price": 0.94, "bid": 0.93, "ask": 0.94},
    ]
    counts = (market["open_interest_contracts"], market["volume_total_contracts"], market["volume_24h_contracts"])
    assert (market["liquidity"], *counts) == (68148.06, 13679.0, 35001.0, 10.0)
    # Kalshi counts contracts, never dollars: the currency columns stay empty rather than mix units (point 6).
    assert (market["open_interest"], market["volume_total"], market["volume_24h"]) == (None, None, None)
    assert market["created_at"] is None  # created_time "0001-01-01T00:00:00Z": Go's zero time
    assert market["trading_start_at"] == utc(2025, 8, 28, 20, 45)
    assert market["resolution_date"] == utc(2099, 8, 1, 15)
    assert market["resolution_criteria"].startswith("If Elon Musk visits Mars")


def test_kalshi_multivariate_markets_normalize_like_any_other() -> None:
    rows = rows_of("kalshi/markets_list_response.json", "markets", "kalshi", "markets")
    assert all(r["id"].startswith("KXMVE") for r in rows)
    assert {(r["status"], r["market_type"]) for r in rows} == {("open", "binary")}
    # Never traded (last_price 0, volume 0), and an empty book (yes bid 0, yes ask 0; no bid and ask 1): no price,
    # no quotes.
    assert rows[0]["current_prices"] == []
    assert (rows[0]["metadata"]["best_bid"], rows[0]["metadata"]["best_ask"]) == (None, None)
    assert rows[4]["created_at"] == datetime(2026, 1, 12, 22, 8, 9, 993730, tzinfo=UTC)
    single = rows_of("kalshi/market_single_response.json", "markets", "kalshi", "markets")[0]
    assert single["id"] == "KXMVENFLSINGLEGAME-S202513E70FA7695-688BECB3826" and single["event_name"] is None


def test_kalshi_trades_are_the_takers_buys() -> None:
    rows = rows_of("kalshi/trades_list_response.json", "trades", "kalshi", "trades")
    first = rows[0]
    assert (first["trade_id"], first["market_id"]) == ("961535f3-d80f-5462-e91d-88d4fe6db285", "KXELONMARS-99")
    assert (first["side"], first["outcome"], first["price"], first["size"], first["taker"]) == (
        "buy",
        "No",
        0.94,  # no_price_dollars "0.9400": the taker bought No
        1.0,
        True,
    )
    assert first["timestamp"] == datetime(2026, 1, 12, 15, 0, 20, 897212, tzinfo=UTC)
    assert orjson.loads(first["metadata"]) == {"taker_side": "no", "yes_price": 0.06, "no_price": 0.94,
                                               "taker_outcome_side": None, "taker_book_side": None,
                                               "is_block_trade": None}  # recorded before Kalshi sent them


def test_kalshi_candles_are_labelled_by_period_start_and_a_period_without_trades_closes_at_the_previous() -> None:
    """Issue 34, point 8: 22 of the recording's 90 daily candles had no trade (`price` OHLC null, `volume` 0);
    each closes at Kalshi's `price.previous` (the last trade's price before it), its open, high and low null,
    so that the market's daily series has no holes."""
    body, context = load("kalshi/series_candlesticks_response.json")
    assert context["period_interval"] == "1440"
    rows = rows_of("kalshi/series_candlesticks_response.json", "price_history", "kalshi", "price_history")
    first, last = rows[0], rows[-1]
    assert body["candlesticks"][0]["end_period_ts"] == 1760500800  # 2025-10-15 04:00 UTC, the period's end
    assert body["candlesticks"][0]["price"]["previous_dollars"] == "0.1100"
    assert first["timestamp"] == utc(2025, 10, 14, 4)
    assert first["price"] == {"open": None, "high": None, "low": None, "close": 0.11}  # no trades that day
    assert first["bid_ask"] == {
        "bid": {"open": 0.08, "high": 0.08, "low": 0.08, "close": 0.08},
        "ask": {"open": 0.11, "high": 0.11, "low": 0.11, "close": 0.11},
    }
    assert (first["market_id"], first["outcome_id"], first["volume"], first["open_interest"]) == (
        "KXELONMARS-99",
        "yes",
        0.0,
        12432.0,
    )
    assert last["timestamp"] == utc(2026, 1, 11, 5)
    assert last["price"] == {"open": 0.07, "high": 0.07, "low": 0.06, "close": 0.06}
    untraded = [r for r in rows if r["volume"] == 0]
    assert len(untraded) == 22 and all(r["price"]["open"] is None for r in untraded)
    assert all(r["price"]["close"] is not None for r in rows)
    traded_closes = {r["timestamp"]: r["price"]["close"] for r in rows if r["volume"]}
    after_a_gap = rows[6]  # 2025-10-20: no trade, the day after a day that closed at 0.08
    assert after_a_gap["volume"] == 0
    assert traded_closes[utc(2025, 10, 19, 4)] == after_a_gap["price"]["close"] == 0.08


def test_a_kalshi_candle_without_a_previous_trade_has_no_close() -> None:
    """A market that never traded has no price to carry: Kalshi's `previous` is absent, or 0 ("never traded", as
    a `last_price` of 0), and the close stays null."""
    body, _ = load("kalshi/series_candlesticks_response.json")
    candle = body["candlesticks"][0]
    never = [{**candle, "price": {k: v for k, v in candle["price"].items() if not k.startswith("previous")}},
             {**candle, "end_period_ts": candle["end_period_ts"] + 86400,
              "price": {**candle["price"], "previous": 0, "previous_dollars": "0.0000"}}]
    rows = run("kalshi", "price_history", {"ticker": "KXELONMARS-99", "candlesticks": never},
               {"period_interval": "1440"})["price_history"].rows
    assert rows["price"].struct.field("close").to_list() == [None, None]


def test_kalshi_candles_need_the_period_interval() -> None:
    body, _ = load("kalshi/series_candlesticks_response.json")
    with pytest.raises(ValueError, match=r"period_interval.*1, 60, 1440.*'none'"):
        run("kalshi", "price_history", body)
    with pytest.raises(ValueError, match="got '5'"):
        run("kalshi", "price_history", body, {"period_interval": "5"})
    hourly = run("kalshi", "price_history", body, {"period_interval": "60"})["price_history"].rows
    assert hourly["timestamp"][0] == utc(2025, 10, 15, 3)


# -- Kalshi rules ------------------------------------------------------------------------------------------


def kalshi_market() -> dict[str, Any]:
    return copy.deepcopy(load("kalshi/event_single_response.json")[0]["markets"][0])


@pytest.mark.parametrize("native", KALSHI_STATUSES, ids=[s.native for s in KALSHI_STATUSES])
def test_kalshi_statuses(native: Any) -> None:
    result = "yes" if native.status == MarketStatus.RESOLVED else ""
    row = one("kalshi", "markets", {"markets": [{**kalshi_market(), "status": native.native, "result": result}]})
    assert row["status"] == native.status


def test_a_kalshi_market_settled_without_a_result_is_cancelled_and_a_settled_one_pays_its_winner() -> None:
    voided = one("kalshi", "markets", {"market": {**kalshi_market(), "status": "finalized", "result": ""}})
    assert voided["status"] == "cancelled"
    settled = one("kalshi", "markets", {"market": {**kalshi_market(), "status": "settled", "result": "no"}})
    assert settled["status"] == "resolved"
    assert [p["price"] for p in settled["current_prices"]] == [0.0, 1.0]


def test_a_settled_kalshi_market_has_no_book_beside_its_payout() -> None:
    """Issue 34, point 7: once the result is known (`determined`, `finalized`, `settled`, `amended`, or `result`
    set), the book Kalshi still sends (here the recorded market's 0.06 / 0.07 and 0.93 / 0.94) is the dead book of
    the close: no bid or ask, the price being the payout. An open market keeps its quotes."""
    recorded = kalshi_market()
    assert (recorded["yes_bid_dollars"], recorded["yes_ask_dollars"], recorded["no_bid_dollars"]) == (
        "0.0600", "0.0700", "0.9300")
    open_row = one("kalshi", "markets", {"market": recorded})
    assert open_row["current_prices"][0] == {"key": "yes", "price": 0.06, "bid": 0.06, "ask": 0.07}
    for status, result in [("finalized", "no"), ("determined", "yes"), ("settled", ""), ("closed", "no")]:
        row = one("kalshi", "markets", {"market": {**recorded, "status": status, "result": result,
                                                   "settlement_value_dollars": "0.0000"}})
        assert [(p["bid"], p["ask"]) for p in row["current_prices"]] == [(None, None)] * len(row["current_prices"])
        assert (row["metadata"]["best_bid"], row["metadata"]["best_ask"]) == (None, None), status
    paid = one("kalshi", "markets", {"market": {**recorded, "status": "finalized", "result": "no"}})
    assert [(p["key"], p["price"]) for p in paid["current_prices"]] == [("yes", 0.0), ("no", 1.0)]


def test_a_recorded_settled_kalshi_market_lands_its_payout_and_no_book() -> None:
    """Issue 34, point 7, on a real recording: Kalshi empties a finalized market's book (bid 0, ask 1 on both
    sides, sizes 0) and keeps a stale `last_price_dollars` (0.001); the row is priced at the payout (`result` no:
    Yes 0, No 1) with no bid or ask, and keeps the last trade as such."""
    body, context = load("kalshi/market_settled_response.json")
    assert (body["market"]["status"], body["market"]["yes_bid_dollars"], body["market"]["yes_ask_dollars"]) == (
        "finalized", "0.0000", "1.0000")
    row = one("kalshi", "markets", body, **context)
    assert row["status"] == MarketStatus.RESOLVED
    assert row["current_prices"] == [{"key": "yes", "price": 0.0, "bid": None, "ask": None},
                                     {"key": "no", "price": 1.0, "bid": None, "ask": None}]
    assert (row["metadata"]["best_bid"], row["metadata"]["best_ask"]) == (None, None)
    assert row["resolved_at"] == datetime(2026, 9, 26, 22, 45, 6, 498770, tzinfo=UTC)
    assert row["last_trade_price"] == 0.001


def test_kalshi_reads_dollar_fields_first_and_cents_only_without_them() -> None:
    both = {**kalshi_market(), "yes_bid_dollars": "0.4200", "yes_bid": 41, "market_type": "scalar"}
    row = one("kalshi", "markets", {"market": both})
    assert row["current_prices"][0]["bid"] == 0.42 and row["market_type"] == "scalar"
    cents_only = {k: v for k, v in kalshi_market().items() if not k.endswith("_dollars")}
    row = one("kalshi", "markets", {"market": {**cents_only, "yes_ask": 57}})
    assert row["current_prices"][0] == {"key": "yes", "price": 0.06, "bid": 0.06, "ask": 0.57}  # not 0.5700...01
    assert row["liquidity"] == 68148.06  # liquidity 6814806 cents
    new_counts = {**kalshi_market(), "volume_fp": "35001.00", "volume": 1}
    assert one("kalshi", "markets", {"market": new_counts})["volume_total_contracts"] == 35001.0


def test_a_candle_takes_its_market_from_the_context_when_the_response_names_none() -> None:
    body, _ = load("kalshi/series_candlesticks_response.json")
    anonymous = {"candlesticks": body["candlesticks"][:2]}
    result = run("kalshi", "price_history", anonymous, {"period_interval": "1440", "market_id": "KXELONMARS-99"})
    assert result["price_history"].rows["market_id"].to_list() == ["KXELONMARS-99"] * 2
    assert (
        reasons("kalshi", "price_history", anonymous, period_interval="1440")
        == ["the response names no market: no 'ticker', and no market_id in the context"] * 2
    )


# -- hostile records ---------------------------------------------------------------------------------------


def kalshi_trades() -> list[dict[str, Any]]:
    return load("kalshi/trades_list_response.json")[0]["trades"]


def camel_trades() -> list[dict[str, Any]]:
    return load("polymarket/data_api_trades_response.json")[0]


def candles() -> list[dict[str, Any]]:
    return copy.deepcopy(load("kalshi/series_candlesticks_response.json")[0]["candlesticks"][-3:])


HOSTILE = [
    ("polymarket", "markets", {"outcomes": '["Yes", "No"'}, "field 'outcomes': not a JSON array of strings: str"),
    ("polymarket", "markets", {"outcomes": '["Yes", 2]'}, "field 'outcomes': not a JSON array of strings"),
    ("polymarket", "markets", {"clobTokenIds": "not json"}, "field 'clobTokenIds': not a JSON array of strings"),
    ("polymarket", "markets", {"clobTokenIds": '["1"]'}, "field 'clobTokenIds': 1 item(s) for 2 outcomes"),
    ("polymarket", "markets", {"outcomePrices": '["0.5", "x"]'}, "field 'outcomePrices': not an array of decimal"),
    (
        "polymarket",
        "markets",
        {"outcomes": '["Yes"]', "clobTokenIds": None, "outcomePrices": None},
        "field 'outcomes': a market has 2 or more outcomes, got 1",
    ),
    ("polymarket", "markets", {"outcomes": ["Yes", "No"]}, "field 'outcomes': expected a string, got list"),
    ("polymarket", "markets", {"id": None}, "missing required field 'id'"),
    ("polymarket", "markets", {"closed": "false"}, "field 'closed': expected a boolean, got str 'false'"),
    ("polymarket", "markets", {"volumeNum": None, "volume": "lots"}, "field 'volume': not a decimal number: 'lots'"),
    ("polymarket", "markets", {"closedTime": "yesterday"}, "field 'closedTime': not a time with a UTC offset"),
    ("polymarket", "markets", {"createdAt": "2026-03-11"}, "field 'createdAt': not an ISO-8601 time"),
    ("polymarket", "trades", {"transactionHash": None}, "missing required field 'transactionHash'"),
    ("polymarket", "trades", {"price": "0.55"}, "field 'price': expected a number, got str '0.55'"),
    ("polymarket", "trades", {"outcomeIndex": 0.5}, "field 'outcomeIndex': not a whole number: 0.5"),
    ("kalshi", "markets", {"ticker": None}, "missing required field 'ticker'"),
    ("kalshi", "markets", {"status": "frozen"}, "field 'status': not one of initialized, inactive, active"),
    ("kalshi", "markets", {"market_type": "categorical"}, "field 'market_type': not one of binary, scalar"),
    ("kalshi", "markets", {"yes_bid_dollars": "abc"}, "field 'yes_bid_dollars': not a decimal number: 'abc'"),
    (
        "kalshi",
        "markets",
        {"last_price_dollars": None, "last_price": None},
        "missing required field 'last_price_dollars' (or 'last_price')",
    ),
    ("kalshi", "trades", {"ticker": None}, "missing required field 'ticker'"),
    ("kalshi", "trades", {"taker_side": "maybe"}, "field 'taker_side': not one of yes, no: 'maybe'"),
    ("kalshi", "trades", {"count_fp": "1,5"}, "field 'count_fp': not a decimal number: '1,5'"),
    ("kalshi", "trades", {"created_time": "2026-01-12 15:00"}, "field 'created_time': not an ISO-8601 time"),
    ("kalshi", "price_history", {"price": None}, "missing required field 'price'"),
    ("kalshi", "price_history", {"end_period_ts": "soon"}, "field 'end_period_ts': expected a Unix time"),
]


def hostile_body(platform: str, entity: str, changes: dict[str, Any]) -> tuple[Any, dict[str, str], int]:
    """A fixture's records with one record changed, its context, and how many records it has."""
    if (platform, entity) == ("polymarket", "markets"):
        records: list[Any] = [gamma_market(), load("polymarket/gamma_market_sports_market_money_line.json")[0]]
        return [{**records[0], **changes}, records[1]], {}, 2
    if (platform, entity) == ("polymarket", "trades"):
        records = camel_trades()
        return [records[0], {**records[1], **changes}, records[2]], {}, 3
    if (platform, entity) == ("kalshi", "markets"):
        return {"markets": [{**kalshi_market(), **changes}, kalshi_market()]}, {}, 2
    if (platform, entity) == ("kalshi", "trades"):
        records = kalshi_trades()
        return {"trades": [{**records[0], **changes}, *records[1:]]}, {}, 5
    records = candles()
    return (
        {"ticker": "KXELONMARS-99", "candlesticks": [records[0], {**records[1], **changes}, records[2]]},
        {"period_interval": "1440"},
        3,
    )


@pytest.mark.parametrize(("platform", "entity", "changes", "reason"), HOSTILE, ids=[h[3][:50] for h in HOSTILE])
def test_a_hostile_record_is_rejected_with_its_reason_and_the_others_kept(
    platform: str, entity: str, changes: dict[str, Any], reason: str
) -> None:
    body, context, total = hostile_body(platform, entity, changes)
    result = run(platform, entity, body, context)[entity]
    assert result.rows.height == total - 1 and result.rows.schema == TABLES[entity].polars_schema
    assert result.rejects.height == 1, result.rejects["reason"].to_list()
    assert result.rejects["reason"][0].startswith(reason), result.rejects["reason"][0]
    raw = orjson.loads(result.rejects["raw"][0])
    assert all(raw.get(key) == value for key, value in changes.items())  # the record as sent


def test_records_that_are_not_objects_are_rejected() -> None:
    result = run("kalshi", "trades", {"trades": [kalshi_trades()[0], "garbage", None]})["trades"]
    assert result.rows.height == 1
    assert result.rejects["reason"].to_list() == [
        "record is not a JSON object: got str 'garbage'",
        "record is not a JSON object: got null",
    ]


def test_a_nested_market_is_rejected_alone_and_its_event_kept() -> None:
    events = load("polymarket/gamma_event.json")[0]
    events[0]["markets"][1]["outcomes"] = "[broken"
    results = run("polymarket", "events", events)
    assert results["events"].rows.height == 1 and results["events"].rejects.is_empty()
    assert results["markets"].rows["id"].to_list() == ["559657"]
    assert results["markets"].rejects["reason"][0].startswith("field 'outcomes': not a JSON array of strings")


@pytest.mark.parametrize(
    ("platform", "entity", "body", "message"),
    [
        ("kalshi", "markets", [], 'kalshi markets: expected an object with "markets"'),
        ("kalshi", "markets", {"orderbook": {}}, "kalshi markets: expected"),
        ("kalshi", "events", {"event": {}, "markets": "x"}, 'kalshi events: expected a "markets" array'),
        ("polymarket", "trades", {"trades": []}, "polymarket trades: expected a Data API array"),
        ("polymarket", "markets", "text", "polymarket markets: expected a Gamma array, one object with its id"),
        ("polymarket", "price_history", [], 'polymarket price_history: expected a CLOB {"history"'),
    ],
)
def test_a_body_of_the_wrong_shape_is_an_error(platform: str, entity: str, body: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("{", r"\{").replace("(", r"\(")):
        run(platform, entity, body, {"market_id": "m", "outcome_id": "o"})


def test_an_unknown_platform_or_entity_is_refused_with_the_allowed_ones() -> None:
    with pytest.raises(ValueError, match=r"unknown platform 'manifold'; expected one of polymarket, kalshi"):
        run("manifold", "markets", [])
    with pytest.raises(ValueError, match=r"unknown entity 'orderbook'; expected one of series, events, markets"):
        run("kalshi", "orderbook", {})


def test_an_empty_response_gives_empty_frames_of_the_schemas() -> None:
    for table, result in run("kalshi", "events", {"events": []}).items():
        assert result.rows.schema == TABLES[table].polars_schema and result.rows.is_empty()
        assert result.rejects.is_empty() and result.rejects.schema == REJECTS_SCHEMA
    assert run("polymarket", "trades", [])["trades"].rows.schema == TABLES["trades"].polars_schema
    frame = run("polymarket", "markets", [])["markets"].rows
    assert frame.schema == TABLES["markets"].polars_schema and isinstance(frame, pl.DataFrame)


# -- what the values mean (placeholders are not prices) ---------------------------------------------------


def _recorded_kalshi_market(**changes: Any) -> dict[str, Any]:
    body, _ = load("kalshi/markets_list_response.json")
    return {**body["markets"][0], **changes}


def test_a_kalshi_market_that_never_traded_has_no_price_but_keeps_its_quoted_book() -> None:
    """The recorded never-traded market (`last_price` 0, `volume` 0) with a book quoting yes 1 to 21 cents: it
    used to land at a yes price of 0.0, a 0% probability."""
    market = _recorded_kalshi_market(yes_bid_dollars="0.0100", yes_ask_dollars="0.2100", no_bid_dollars="0.7900",
                                     no_ask_dollars="0.9900")
    assert (market["last_price_dollars"], market["volume"]) == ("0.0000", 0)
    row = one("kalshi", "markets", {"markets": [market]})
    assert row["current_prices"] == []
    assert (row["metadata"]["best_bid"], row["metadata"]["best_ask"]) == (0.01, 0.21)


def test_a_kalshi_book_side_without_orders_is_no_quote() -> None:
    """Traded at 35 cents; nobody bids (`yes_bid` 0, so `no_ask` 1) and the asks are gone (`yes_ask` 1)."""
    market = _recorded_kalshi_market(last_price_dollars="0.3500", volume=12, yes_bid_dollars="0.0000",
                                     yes_ask_dollars="1.0000", no_bid_dollars="0.0000", no_ask_dollars="1.0000")
    row = one("kalshi", "markets", {"markets": [market]})
    assert row["current_prices"] == [{"key": "yes", "price": 0.35, "bid": None, "ask": None},
                                     {"key": "no", "price": 0.65, "bid": None, "ask": None}]


def test_a_polymarket_dead_book_is_no_quote() -> None:
    """The recorded market's book emptied: Gamma writes `bestBid` 0 and `bestAsk` 1 (and a spread of 1)."""
    market, _ = load("polymarket/gamma_market.json")
    row = one("polymarket", "markets", [{**market, "bestBid": 0, "bestAsk": 1, "spread": 1}])
    assert (row["metadata"]["best_bid"], row["metadata"]["best_ask"], row["metadata"]["spread"]) == (None, None, None)
    assert (row["current_prices"][0]["bid"], row["current_prices"][0]["ask"]) == (None, None)
    kept = one("polymarket", "markets", [market])  # the recorded quotes themselves are kept as sent
    quotes = kept["metadata"]
    assert (quotes["best_bid"], quotes["best_ask"], quotes["spread"]) == (0.5, 0.51, 0.009)


# -- what Kalshi's fields mean (issue 22) -------------------------------------------------------------------


def _pope_leg(ticker: str, candidate: str) -> dict[str, Any]:
    """A leg of the recorded mutually exclusive event (KXNEWPOPE-70), shaped as the recorded market: Kalshi
    titles every leg with the event's question; only `yes_sub_title` names the candidate."""
    return {**kalshi_market(), "ticker": ticker, "event_ticker": "KXNEWPOPE-70", "title": "Who will the next Pope be?",
            "subtitle": "", "yes_sub_title": candidate, "no_sub_title": candidate}


def _pope_event(**changes: Any) -> dict[str, Any]:
    body, _ = load("kalshi/events_list_response.json")
    return {**next(e for e in body["events"] if e["event_ticker"] == "KXNEWPOPE-70"), **changes}


def test_a_kalshi_leg_of_a_mutually_exclusive_event_keeps_its_candidate_and_grouping() -> None:
    """Points 3 and 7: the candidate is only in `yes_sub_title`; the event's `mutually_exclusive` reaches the
    event row and the markets nested in it."""
    legs = [_pope_leg("KXNEWPOPE-70-PPAR", "Pietro Parolin"), _pope_leg("KXNEWPOPE-70-LTAG", "Luis Antonio Tagle")]
    result = run("kalshi", "events", {"events": [_pope_event(markets=legs)]})
    event = result["events"].rows.row(0, named=True)
    assert event["mutually_exclusive"] is True
    markets = result["markets"].rows.sort("id").to_dicts()
    assert [m["outcome_label"] for m in markets] == ["Luis Antonio Tagle", "Pietro Parolin"]
    assert {m["title"] for m in markets} == {"Who will the next Pope be?"}
    assert [m["mutually_exclusive"] for m in markets] == [True, True]
    # The outcomes stay Yes and No (what trades name); the label is the market's, in outcome_label.
    assert markets[0]["outcomes"] == [{"id": "yes", "name": "Yes"}, {"id": "no", "name": "No"}]


def test_markets_beside_a_kalshi_event_take_its_exclusivity_and_listed_alone_have_none() -> None:
    """Point 7, `/events/{ticker}` (markets beside the event) and `/markets` (no event)."""
    body, _ = load("kalshi/event_single_response.json")
    assert body["event"]["mutually_exclusive"] is False
    result = run("kalshi", "events", body)
    assert result["events"].rows["mutually_exclusive"].to_list() == [False]
    assert result["markets"].rows["mutually_exclusive"].to_list() == [False]
    exclusive = run("kalshi", "events", {**body, "event": {**body["event"], "mutually_exclusive": True}})
    assert exclusive["markets"].rows["mutually_exclusive"].to_list() == [True]
    assert one("kalshi", "markets", {"market": kalshi_market()})["mutually_exclusive"] is None


def test_a_kalshi_bracket_keeps_its_subtitle_strikes_and_label() -> None:
    """Point 3: a temperature bracket as Kalshi writes one (`strike_type` between, `floor_strike`, `cap_strike`)."""
    bracket = {**kalshi_market(), "subtitle": "44° to 45°", "yes_sub_title": "44° to 45°", "strike_type": "between",
               "floor_strike": 44, "cap_strike": 45.5}
    row = one("kalshi", "markets", {"market": bracket})
    assert (row["subtitle"], row["outcome_label"], row["strike_type"]) == ("44° to 45°", "44° to 45°", "between")
    assert (row["lower_bound"], row["upper_bound"]) == (44.0, 45.5)
    recorded = one("kalshi", "markets", {"market": kalshi_market()})  # subtitle "", no strikes: nulls
    assert (recorded["subtitle"], recorded["outcome_label"], recorded["lower_bound"]) == (None, "Mars", None)


def test_a_settled_kalshi_scalar_is_priced_at_its_settlement_value() -> None:
    """Point 10: result `scalar` pays `settlement_value_dollars` a Yes (long) contract, not the last trade's
    price; `settlement_ts` is when it settled (Kalshi's only resolution time)."""
    scalar = {**kalshi_market(), "market_type": "scalar", "status": "finalized", "result": "scalar",
              "last_price_dollars": "0.5100", "settlement_value_dollars": "0.4700", "settlement_value": 47,
              "settlement_ts": "2026-01-12T15:00:00Z", "expiration_value": "2.9"}
    row = one("kalshi", "markets", {"market": scalar})
    assert (row["status"], row["market_type"]) == ("resolved", "scalar")
    assert [(p["key"], p["price"]) for p in row["current_prices"]] == [("yes", 0.47), ("no", 0.53)]
    assert (row["settlement_value"], row["expiration_value"], row["last_trade_price"]) == (0.47, "2.9", 0.51)
    assert row["resolved_at"] == utc(2026, 1, 12, 15)
    cents_only = {k: v for k, v in scalar.items() if k != "settlement_value_dollars"}
    assert one("kalshi", "markets", {"market": cents_only})["settlement_value"] == 0.47
    unsettled = one("kalshi", "markets", {"market": kalshi_market()})
    assert (unsettled["settlement_value"], unsettled["resolved_at"], unsettled["expiration_value"]) == (None,) * 3


def test_kalshi_series_fees_are_read() -> None:
    """Point 11: the recorded series' `fee_type` and `fee_multiplier`."""
    row = rows_of("kalshi/series_single_response.json", "series", "kalshi", "series")[0]
    assert (row["fee_type"], row["fee_multiplier"]) == ("quadratic", 1.0)


def test_a_kalshi_liquidity_placeholder_is_no_value() -> None:
    """Point 12: Kalshi deprecated `liquidity_dollars`, which now always reads "0.0000" (the recorded MVE markets,
    deep books included): stored null, not as an empty book. A value recorded before that stays."""
    market = _recorded_kalshi_market(yes_bid_dollars="0.4000", yes_ask_dollars="0.4200", yes_bid_size_fp="5000.00")
    assert (market["liquidity_dollars"], market["liquidity"]) == ("0.0000", 0)
    assert one("kalshi", "markets", {"markets": [market]})["liquidity"] is None
    cents_only = {k: v for k, v in market.items() if k != "liquidity_dollars"}
    assert one("kalshi", "markets", {"markets": [cents_only]})["liquidity"] is None
    assert one("kalshi", "markets", {"market": kalshi_market()})["liquidity"] == 68148.06


def test_kalshi_cents_become_exact_dollars() -> None:
    """Point 12: polars computes `cents / 100` as `cents * 0.01`, which makes 35 cents 0.35000000000000003."""
    cents_only = {k: v for k, v in kalshi_market().items() if not k.endswith("_dollars")}
    market = {**cents_only, "last_price": 35, "yes_bid": 29, "yes_ask": 57, "no_bid": 43, "no_ask": 71}
    row = one("kalshi", "markets", {"market": market})
    assert row["current_prices"] == [{"key": "yes", "price": 0.35, "bid": 0.29, "ask": 0.57},
                                     {"key": "no", "price": 0.65, "bid": 0.43, "ask": 0.71}]
    assert row["last_trade_price"] == 0.35
    body, _ = load("kalshi/trades_list_response.json")
    trade = {k: v for k, v in body["trades"][0].items() if not k.endswith("_dollars")}
    cents_trade = one("kalshi", "trades", {"trades": [{**trade, "yes_price": 35, "no_price": 65}]})
    assert cents_trade["price"] == 0.65 and orjson.loads(cents_trade["metadata"])["yes_price"] == 0.35


def test_the_kalshi_last_trade_price_is_the_yes_price_of_the_last_trade() -> None:
    """Point 12: `last_price_dollars`; null for a market that never traded; a settled market keeps it."""
    assert one("kalshi", "markets", {"market": kalshi_market()})["last_trade_price"] == 0.06
    assert one("kalshi", "markets", {"markets": [_recorded_kalshi_market()]})["last_trade_price"] is None
    settled = one("kalshi", "markets", {"market": {**kalshi_market(), "status": "finalized", "result": "yes"}})
    assert settled["last_trade_price"] == 0.06 and settled["current_prices"][0]["price"] == 1.0


def _recorded_trade(**changes: Any) -> dict[str, Any]:
    body, _ = load("kalshi/trades_list_response.json")
    return {**body["trades"][0], **changes}


def test_kalshi_trades_read_the_new_side_fields_and_keep_them() -> None:
    """Point 12: `taker_outcome_side`, `taker_book_side` (bid is Yes, ask is No) and `is_block_trade`; a trade
    without the deprecated `taker_side` is read from them, not rejected."""
    newer = {k: v for k, v in _recorded_trade().items() if k != "taker_side"}
    by_outcome = one("kalshi", "trades", {"trades": [{**newer, "taker_outcome_side": "no", "taker_book_side": "ask",
                                                      "is_block_trade": True}]})
    assert (by_outcome["outcome"], by_outcome["price"]) == ("No", 0.94)
    assert orjson.loads(by_outcome["metadata"]) == {"taker_side": "no", "yes_price": 0.06, "no_price": 0.94,
                                                    "taker_outcome_side": "no", "taker_book_side": "ask",
                                                    "is_block_trade": True}
    by_book = one("kalshi", "trades", {"trades": [{**newer, "taker_book_side": "bid"}]})
    assert (by_book["outcome"], by_book["price"]) == ("Yes", 0.06)
    assert reasons("kalshi", "trades", {"trades": [newer]}) == [
        "missing required field 'taker_outcome_side' (or 'taker_book_side', 'taker_side')"
    ]
    assert reasons("kalshi", "trades", {"trades": [{**newer, "taker_outcome_side": "maybe"}]}) == [
        "field 'taker_outcome_side': not one of yes, no: 'maybe'"
    ]


def _candles(n: int) -> list[dict[str, Any]]:
    body, _ = load("kalshi/series_candlesticks_response.json")
    return body["candlesticks"][-n:]


def test_kalshi_batch_candlesticks_land_under_each_market() -> None:
    """Point 13: `GET /markets/candlesticks` answers `{markets: [{market_ticker, candlesticks}]}`."""
    body = {"markets": [{"market_ticker": "KXA-1", "candlesticks": _candles(2)},
                        {"market_ticker": "KXB-1", "candlesticks": _candles(3)}]}
    rows = run("kalshi", "price_history", body, {"period_interval": "1440"})["price_history"].rows
    assert rows["market_id"].to_list() == ["KXA-1"] * 2 + ["KXB-1"] * 3
    assert rows["price"].struct.field("close").to_list()[-1] == 0.06
    asked = {"period_interval": "1440", "market_tickers": "KXA-1"}
    result = run("kalshi", "price_history", body, asked)["price_history"]
    assert result.rows["market_id"].unique().to_list() == ["KXA-1"]
    assert result.rejects["reason"].to_list() == ["candles of market 'KXB-1', which was not asked for"] * 3
    empty = run("kalshi", "price_history", {"markets": []}, asked)["price_history"]
    assert empty.rows.schema == TABLES["price_history"].polars_schema and empty.rows.is_empty()


def test_kalshi_event_candlesticks_land_under_each_market() -> None:
    """Point 13: `GET /series/{s}/events/{e}/candlesticks` answers parallel `market_tickers` and
    `market_candlesticks`, and `adjusted_end_ts`."""
    body = {"market_tickers": ["KXA-1", "KXB-1"], "market_candlesticks": [_candles(1), _candles(2)],
            "adjusted_end_ts": 1768107600}
    rows = run("kalshi", "price_history", body, {"period_interval": "1440"})["price_history"].rows
    assert rows["market_id"].to_list() == ["KXA-1", "KXB-1", "KXB-1"]
    with pytest.raises(ValueError, match=r"as many market_tickers .* as market_candlesticks, not 2 and 1"):
        run("kalshi", "price_history", {**body, "market_candlesticks": [_candles(1)]}, {"period_interval": "1440"})
