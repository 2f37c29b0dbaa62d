"""Issue 22: Polymarket's fields read for what they mean, on payloads built from the recorded Gamma and Data API
responses (tests/fixtures/polymarket) and Polymarket's documented examples."""

from __future__ import annotations

from typing import Any

import pytest

from pipeline.engine.normalize.native_frames import ShapeError
from tests.engine.normalize.test_native import gamma_market, one, run, utc
from tests.support.native_cases import load

SPORTS = "polymarket/gamma_market_sports_market_money_line.json"
CLOSED = "polymarket/gamma_market_closed_binary_accepting_true.json"


def sports_market() -> dict[str, Any]:
    return load(SPORTS)[0]


def closed_market() -> dict[str, Any]:
    return load(CLOSED)[0]


def event_markets() -> list[dict[str, Any]]:
    return run("polymarket", "events", load("polymarket/gamma_event.json")[0])["markets"].rows.to_dicts()


def first_price(row: dict[str, Any]) -> float | None:
    return row["current_prices"][0]["price"] if row["current_prices"] else None


# -- point 2: a match is counted once -----------------------------------------------------------------------


def test_trades_asked_taker_only_are_the_takers_rows() -> None:
    body, _ = load("polymarket/data_api_trades_response.json")
    asked = run("polymarket", "trades", body, {"market_id": "559657", "taker_only": "true"})["trades"].rows
    assert asked["taker"].to_list() == [True, True, True]
    unknown = run("polymarket", "trades", body)["trades"].rows  # a saved response does not say what was asked
    assert unknown["taker"].to_list() == [None, None, None]


# -- point 3: the label of a market among its event's ------------------------------------------------------


def test_group_item_title_is_the_outcome_label() -> None:
    assert [m["outcome_label"] for m in event_markets()] == ["Stephen A. Smith", "Gretchen Whitmer"]
    assert one("polymarket", "markets", closed_market())["outcome_label"] is None  # "groupItemTitle": ""


# -- point 4: closed markets are settled, never paused -------------------------------------------------------


def legacy_scalar() -> dict[str, Any]:
    """A 2020 scalar market as Gamma serves it: closed, no UMA status, its fractional payout and bounds."""
    return {
        **gamma_market(),
        "marketType": "scalar",
        "outcomes": '["Long", "Short"]',
        "outcomePrices": '["0.5849999999999999", "0.4150000000000001"]',
        "closed": True,
        "active": True,
        "acceptingOrders": False,
        "startDate": "2020-10-01T00:00:00Z",
        "endDate": "2021-01-01T00:00:00Z",
        "closedTime": "2021-01-02 12:00:00+00",
        "lowerBound": "0",
        "upperBound": "100",
        "bestBid": None,
        "bestAsk": None,
        "lastTradePrice": None,
    }


def test_a_legacy_scalar_market_resolved_by_its_fractional_payout_keeps_its_bounds() -> None:
    row = one("polymarket", "markets", legacy_scalar())
    assert (row["status"], row["market_type"]) == ("resolved", "scalar")
    assert (row["lower_bound"], row["upper_bound"]) == (0.0, 100.0)
    assert row["settlement_value"] == 0.5849999999999999 and first_price(row) == 0.5849999999999999
    assert row["resolved_at"] == utc(2021, 1, 2, 12)
    as_numbers = one("polymarket", "markets", {**legacy_scalar(), "lowerBound": 0, "upperBound": 100.5})
    assert (as_numbers["lower_bound"], as_numbers["upper_bound"]) == (0.0, 100.5)  # a Gamma writing JSON numbers


def test_a_legacy_binary_market_with_placeholder_prices_is_resolved_without_a_price() -> None:
    legacy = {**legacy_scalar(), "marketType": "normal", "outcomes": '["Yes", "No"]', "outcomePrices": '["0", "0"]'}
    row = one("polymarket", "markets", legacy)
    assert row["status"] == "resolved"  # trading is over: never paused; no winner on record
    assert row["current_prices"] == [] and row["settlement_value"] is None


def test_a_resolved_market_settles_at_its_first_outcomes_payout() -> None:
    assert one("polymarket", "markets", closed_market())["settlement_value"] == 1.0  # outcomePrices ["1", "0"]
    assert one("polymarket", "markets", sports_market())["settlement_value"] == 1.0
    assert one("polymarket", "markets", gamma_market())["settlement_value"] is None  # open


# -- point 5: the displayed price ----------------------------------------------------------------------------


def test_a_wide_book_shows_the_last_trade_price() -> None:
    """Polymarket displays the midpoint, or the last trade when the spread is wider than 10 cents."""
    live = {**sports_market(), "closed": False, "acceptingOrders": True, "umaResolutionStatus": None,
            "bestBid": 0.06, "bestAsk": 0.99, "spread": 0.93, "lastTradePrice": 0.99,
            "outcomePrices": '["0.525", "0.475"]'}
    row = one("polymarket", "markets", live)
    assert row["status"] == "open"
    assert [p["price"] for p in row["current_prices"]] == [0.99, 0.01]
    assert row["last_trade_price"] == 0.99
    narrow = one("polymarket", "markets", gamma_market())  # bid 0.5, ask 0.51: the midpoint 0.505
    assert (first_price(narrow), narrow["last_trade_price"]) == (0.505, 0.51)


# -- point 7: grouping ---------------------------------------------------------------------------------------


def test_negative_risk_groups_the_markets_and_the_event() -> None:
    markets = event_markets()
    group = "0x2c3d7e0eee6f058be3006baabf0d54a07da254ba47fe6e3e095e7990c7814700"
    assert [(m["mutually_exclusive"], m["neg_risk_market_id"]) for m in markets] == [(True, group)] * 2
    event = run("polymarket", "events", load("polymarket/gamma_event.json")[0])["events"].rows.row(0, named=True)
    assert event["mutually_exclusive"] is True
    assert one("polymarket", "markets", gamma_market())["mutually_exclusive"] is False


# -- point 8: a category from the event's tags ----------------------------------------------------------------


def test_the_category_comes_from_the_events_tags_or_the_sport() -> None:
    assert {m["category"] for m in event_markets()} == {"Politics"}  # tags: ..., Elections, Politics, ...
    assert one("polymarket", "markets", sports_market())["category"] == "Sports"  # sportsMarketType moneyline
    series = {"id": "1", "title": "BTC Up or Down", "tags": [{"label": "Crypto Prices"}, {"label": "Crypto"}]}
    assert one("polymarket", "series", series)["category"] == "Crypto"


# -- point 9: an early close ---------------------------------------------------------------------------------


def test_a_market_closed_before_its_end_date_stopped_trading_then() -> None:
    row = one("polymarket", "markets", closed_market())  # endDate 2027-12-31, closedTime 2026-05-09 02:07:01
    assert row["trading_end_at"] == utc(2026, 5, 9, 2, 7, 1)
    assert row["resolution_date"] == utc(2027, 12, 31)


# -- point 11: fees and the event's start ----------------------------------------------------------------------


def test_fees_and_the_games_start() -> None:
    row = one("polymarket", "markets", sports_market())
    assert (row["fee_rate"], row["fee_type"]) == (0.03, "sports_fees_v2")
    assert row["event_start_at"] == utc(2026, 4, 5, 15, 10)  # eventStartTime
    early = one("polymarket", "markets", closed_market())  # no game: its gameStartTime is no start (issue 34)
    assert (early["event_start_at"], early["fee_rate"], early["fee_type"]) == (None, None, None)
    event = run("polymarket", "events", load("polymarket/gamma_event.json")[0])["events"].rows.row(0, named=True)
    assert event["event_start_at"] == utc(2028, 11, 7, 12)  # startTime, the real-world start


# -- point 12: wrapped pages, anonymous traders, omitted and exact volumes ---------------------------------------


@pytest.mark.parametrize("wrapper", ["events", "data"])
def test_a_wrapped_gamma_page_is_read_as_its_list(wrapper: str) -> None:
    body = {wrapper: load("polymarket/gamma_event.json")[0], "pagination": {"hasMore": False, "totalResults": 1}}
    assert run("polymarket", "events", body)["events"].rows["id"].to_list() == ["30829"]
    markets = {"markets": [gamma_market()], "next_cursor": None}
    assert run("polymarket", "markets", markets)["markets"].rows["id"].to_list() == ["1557558"]


def test_an_unknown_wrapper_is_a_shape_error() -> None:
    with pytest.raises(ShapeError, match="polymarket markets"):
        run("polymarket", "markets", {"results": [gamma_market()], "pagination": {}})


def test_an_anonymous_trader_is_no_user() -> None:
    body = load("polymarket/data_api_trades_captured_response.json")[0]
    anonymous = {**body["data"][0], "name": "", "pseudonym": "", "profile_image": ""}
    rows = run("polymarket", "trades", {**body, "data": [anonymous]})["trades"].rows
    assert rows["user"].to_list() == [None]


def test_omitted_trailing_volumes_are_zero_and_the_exact_volume_is_preferred() -> None:
    row = one("polymarket", "markets", closed_market())  # Gamma leaves volume24hr and volume1wk out: 0
    assert (row["volume_24h"], row["volume_7d"]) == (0.0, 0.0)
    rounded = {**event_markets_raw()[0], "volumeNum": 12232699.62, "liquidityNum": 400500.67}
    row = one("polymarket", "markets", rounded)
    assert (row["volume_total"], row["liquidity"]) == (12232699.615479222, 400500.66675)


def event_markets_raw() -> list[dict[str, Any]]:
    return load("polymarket/gamma_event.json")[0][0]["markets"]


# -- issue 34: recorded Gamma pages of open events (tests/fixtures/polymarket/gamma_events_open_excerpt.json) -----


OPEN_EVENTS = "polymarket/gamma_events_open_excerpt.json"


def open_events() -> dict[str, Any]:
    return run("polymarket", "events", load(OPEN_EVENTS)[0])


def open_markets() -> dict[str, dict[str, Any]]:
    return {row["id"]: row for row in open_events()["markets"].rows.to_dicts()}


def test_game_start_time_is_a_start_only_on_a_game() -> None:
    """Gamma leaves a `gameStartTime` on markets that are no game: the ceasefire market has one and no
    `sportsMarketType`; the esports map market's is its map's start."""
    assert one("polymarket", "markets", closed_market())["event_start_at"] is None
    assert open_markets()["4573020"]["event_start_at"] == utc(2026, 9, 15, 15, 30)  # child_moneyline


def test_an_empty_book_side_is_no_wide_spread() -> None:
    """Polymarket shows the midpoint unless the spread is wider than 10 cents. An empty side is a bid of 0 or an
    ask of 1, as Gamma's own `spread` counts it: no bid against an ask of 0.001 is a spread of 0.001."""
    markets = open_markets()
    assert first_price(markets["2252242"]) == 0.0005  # no bestBid, bestAsk 0.001, spread 0.001
    assert first_price(markets["1130017"]) == 0.0005  # the same on another event
    assert first_price(markets["4573020"]) == 0.9995  # bestBid 0.999, bestAsk 1 (no ask), spread 0.001
    assert first_price(markets["1130012"]) == 0.765  # a two-sided book
    assert markets["2252242"]["last_trade_price"] == 0.001


def test_an_unnamed_negative_risk_leg_is_a_placeholder_and_not_counted() -> None:
    """The inactive leg of a negative-risk event with no prices and no volume is a placeholder, not a market of
    the event: flagged, and left out of the event's `market_count`."""
    result = open_events()
    markets = {row["id"]: row["placeholder"] for row in result["markets"].rows.to_dicts()}
    assert [key for key, flagged in markets.items() if flagged] == ["1130019"]  # "Other", active: false
    assert markets["1130012"] is False and markets["4573020"] is False
    counts = dict(result["events"].rows.select("id", "market_count").iter_rows())
    assert counts == {"481717": 2.0, "149589": 2.0, "1025935": 1.0}


def test_fill_prices_lose_their_float_noise() -> None:
    body = load("polymarket/data_api_trades_captured_response.json")[0]  # 0.709999959 for 0.71
    assert run("polymarket", "trades", body)["trades"].rows["price"].to_list() == [0.7, 0.71, 0.297258]


def test_a_market_without_start_date_started_with_its_event_or_when_created() -> None:
    legacy = one("polymarket", "markets", load("polymarket/gamma_market_closed_zero_zero_legacy.json")[0])
    assert legacy["trading_start_at"] == utc(2020, 10, 2, 16, 10, 1, 467000)  # no startDate: createdAt
    undated = one("polymarket", "markets", {**gamma_market(), "startDate": None})
    assert undated["trading_start_at"] == utc(2026, 3, 11, 9, 29, 37, 152914)  # its event's startDate


def test_an_event_without_its_series_names_it_by_slug() -> None:
    """The sports market's event (nested by `/markets`) has `seriesSlug` "counter-strike" and no `series`."""
    assert one("polymarket", "markets", sports_market())["series_id"] == "counter-strike"
    assert one("polymarket", "markets", gamma_market())["series_id"] == "10684"  # series[0].id first
    event = {**sports_market()["events"][0], "markets": []}
    assert run("polymarket", "events", [event])["events"].rows["series_id"].to_list() == ["counter-strike"]
