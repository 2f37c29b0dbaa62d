"""Each reading of the sandbox changes its answers as docs/api-readings.md says, and nothing else."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import fields
from itertools import pairwise
from typing import Any

import httpx
import pytest

from pmw_sandbox import SandboxApp, SandboxConfig, sandbox_client
from pmw_sandbox.readings import CHOICES, Readings
from tests.support.readings import each_alone, every_other
from tests.support.world import WORLD

DAY_START = 1_795_219_200  # 2026-11-21T00:00:00Z, the world's last day


@pytest.fixture(scope="module")
def apps() -> dict[str, SandboxApp]:
    return {}


def _client(apps: dict[str, SandboxApp], readings: str = "") -> httpx.Client:
    if readings not in apps:
        apps[readings] = SandboxApp(SandboxConfig(world=WORLD, readings=Readings.parse(readings)))
    return sandbox_client(apps[readings])


def _get(apps: dict[str, SandboxApp], readings: str, path: str, **params: Any) -> Any:
    with _client(apps, readings) as client:
        answer = client.get(path, params=params)
        assert answer.status_code == 200, answer.text
        return answer.json()


@pytest.fixture(scope="module")
def market(apps: dict[str, SandboxApp]) -> dict[str, Any]:
    """A busy Polymarket market: its unified id differs from its platform id (a condition id)."""
    markets = _get(apps, "", "/markets", platform="polymarket", limit=250)["markets"]
    return max(markets, key=lambda m: m["volume_total"] or 0)


def _trades(apps: dict[str, SandboxApp], readings: str, market_id: str, limit: int = 50) -> list[dict[str, Any]]:
    return _get(apps, readings, "/trades", market_id=market_id, limit=limit)["trades"]


def _points(apps: dict[str, SandboxApp], readings: str, *ids: str, shift: int = 0) -> list[dict[str, Any]]:
    start = DAY_START + shift
    query = {"market_ids": ",".join(ids), "start_ts": start, "end_ts": start + 86_399, "interval": 60}
    return _get(apps, readings, "/price-history", **query)["data"]


def test_trades_oldest_first(apps: dict[str, SandboxApp], market: dict[str, Any]) -> None:
    newest = _trades(apps, "", market["id"])
    oldest = _trades(apps, "trades_order=oldest_first", market["id"])
    assert [t["timestamp"] for t in newest] == sorted((t["timestamp"] for t in newest), reverse=True)
    assert [t["timestamp"] for t in oldest] == sorted(t["timestamp"] for t in oldest)
    assert oldest[0]["timestamp"] < newest[-1]["timestamp"]


@pytest.mark.parametrize(("reading", "expected"), [("unified", "id"), ("platform", "platform_id"), ("absent", None)])
def test_the_market_id_on_trades_and_points(
    apps: dict[str, SandboxApp], market: dict[str, Any], reading: str, expected: str | None
) -> None:
    readings = f"row_market_id={reading}"
    trades, points = _trades(apps, readings, market["id"]), _points(apps, readings, market["id"])
    assert trades and points
    if expected is None:
        assert all("market_id" not in t for t in trades) and all("marketId" not in p for p in points)
    else:
        assert {t["market_id"] for t in trades} == {p["marketId"] for p in points} == {market[expected]}


def test_trade_outcomes_by_id(apps: dict[str, SandboxApp], market: dict[str, Any]) -> None:
    ids = {o["id"] for o in market["outcomes"]}
    assert {t["outcome"] for t in _trades(apps, "trade_outcome=id", market["id"])} <= ids
    assert not {t["outcome"] for t in _trades(apps, "", market["id"])} & ids


def test_points_labelled_by_period_end(apps: dict[str, SandboxApp], market: dict[str, Any]) -> None:
    starts = {(p["outcomeId"], p["timestamp"]): p["price"] for p in _points(apps, "", market["id"])}
    labelled_by_end = _points(apps, "price_label=period_end", market["id"], shift=3600)  # the same periods
    ends = {(p["outcomeId"], p["timestamp"] - 3600): p["price"] for p in labelled_by_end}
    assert starts == ends


@pytest.mark.parametrize("order", ["by_market_reversed", "by_time"])
def test_points_in_another_order_are_the_same_points(apps: dict[str, SandboxApp], order: str) -> None:
    markets = _get(apps, "", "/markets", platform="kalshi", limit=3)["markets"]
    ids = [m["id"] for m in markets]
    grouped = _points(apps, "", *ids)
    other = _points(apps, f"price_points_order={order}", *ids)
    assert other != grouped and sorted(map(repr, other)) == sorted(map(repr, grouped))
    markets_in_order = list(dict.fromkeys(p["marketId"] for p in other))
    if order == "by_time":
        assert [p["timestamp"] for p in other] == sorted(p["timestamp"] for p in other)
    else:
        assert markets_in_order == ids[::-1]


def _walk(apps: dict[str, SandboxApp], readings: str, path: str, key: str, **params: Any) -> Iterator[dict[str, Any]]:
    """Every page of a list, by cursor, until has_more is false."""
    with _client(apps, readings) as client:
        cursor = None
        while True:
            body = client.get(path, params={**params, **({"cursor": cursor} if cursor else {})}).json()
            yield body
            if not body["pagination"]["has_more"]:
                return
            cursor = body["pagination"]["next_cursor"]


def test_short_pages_cursor_on_the_last_page_and_the_total(apps: dict[str, SandboxApp]) -> None:
    readings = "short_pages=true,cursor_on_last_page=true,pagination_total=wrong"
    pages = list(_walk(apps, readings, "/markets", "markets", platform="kalshi", limit=100))
    plain = list(_walk(apps, "", "/markets", "markets", platform="kalshi", limit=100))
    assert [m["id"] for p in pages for m in p["markets"]] == [m["id"] for p in plain for m in p["markets"]]
    assert all(len(p["markets"]) < 100 for p in pages) and pages[0]["pagination"]["has_more"]
    assert pages[-1]["pagination"]["next_cursor"] is not None and plain[-1]["pagination"]["next_cursor"] is None
    total = sum(len(p["markets"]) for p in plain)
    assert {p["pagination"]["total"] for p in pages} == {total // 2}  # wrong, and too low: no item looks lost
    absent = _get(apps, "pagination_total=absent", "/markets", platform="kalshi")["pagination"]
    assert "total" not in absent


def test_lists_reversed(apps: dict[str, SandboxApp]) -> None:
    def ids(readings: str) -> list[str]:
        return [e["id"] for e in _get(apps, readings, "/events", platform="kalshi", limit=100)["events"]]

    assert ids("list_order=reversed") == ids("")[::-1]


def test_the_single_item_envelope(apps: dict[str, SandboxApp], market: dict[str, Any]) -> None:
    listed = _get(apps, "", f"/markets/{market['id']}")
    data = _get(apps, "single_envelope=data", f"/markets/{market['id']}")
    assert listed["markets"][0] == data["data"] == market
    assert set(data) == {"data", "meta"}


@pytest.mark.parametrize(("reading", "suffix"), [("offset", "+00:00"), ("fractional", ".000Z")])
def test_iso_times(apps: dict[str, SandboxApp], market: dict[str, Any], reading: str, suffix: str) -> None:
    written = _get(apps, f"iso_times={reading}", f"/markets/{market['id']}")["markets"][0]
    assert written["created_at"] == market["created_at"].removesuffix("Z") + suffix


def test_iso_times_in_lower_case(apps: dict[str, SandboxApp], market: dict[str, Any]) -> None:
    written = _get(apps, "iso_times=lowercase", f"/markets/{market['id']}")["markets"][0]
    assert written["created_at"] == market["created_at"].replace("T", "t").replace("Z", "z")


@pytest.mark.parametrize("platform", ["polymarket", "kalshi"])
def test_members_named_by_platform_id(apps: dict[str, SandboxApp], platform: str) -> None:
    readings = "member_ids=platform"
    series = {s["id"]: s for s in _get(apps, "", "/series", platform=platform, limit=100)["series"]}
    events = {e["id"]: e for e in _get(apps, "", "/events", platform=platform, limit=100)["events"]}
    served_series = {s["id"]: s for s in _get(apps, readings, "/series", platform=platform, limit=100)["series"]}
    served_events = {e["id"]: e for e in _get(apps, readings, "/events", platform=platform, limit=100)["events"]}
    assert served_series.keys() == series.keys() and served_events.keys() == events.keys()  # the same ids
    assert all(s["platform_id"] == s["id"] for s in (*series.values(), *events.values()))
    assert all(s["platform_id"] != s["id"] for s in (*served_series.values(), *served_events.values()))
    event_by, series_by = ({m["platform_id"]: i for i, m in served.items()} for served in (served_events,
                                                                                          served_series))
    assert {series_by[e["series_id"]] for e in served_events.values()} == {e["series_id"] for e in events.values()}
    markets = _get(apps, "", "/markets", platform=platform, limit=100)["markets"]
    served = _get(apps, readings, "/markets", platform=platform, limit=100)["markets"]
    assert [(event_by[m["event_id"]], series_by[m["series_id"]]) for m in served] == [
        (m["event_id"], m["series_id"]) for m in markets]


def test_price_maps_keyed_by_outcome_name(apps: dict[str, SandboxApp]) -> None:
    for platform in ("polymarket", "kalshi"):
        markets = _get(apps, "", "/markets", platform=platform, limit=50)["markets"]
        served = _get(apps, "price_keys=name", "/markets", platform=platform, limit=50)["markets"]
        for by_id, by_name in zip(markets, served, strict=True):
            names = {o["id"]: o["name"] for o in by_id["outcomes"]}
            for key in ("current_prices", "price_24h_changes", "price_7d_changes", "last_trades"):
                expected = None if by_id[key] is None else {names[k]: v for k, v in by_id[key].items()}
                assert by_name[key] == expected, key
        assert any("Yes" in m["current_prices"] for m in served) or platform == "polymarket"


def test_markets_asked_only_by_platform_id(apps: dict[str, SandboxApp], market: dict[str, Any]) -> None:
    readings, condition_id = "market_id_param=platform", market["platform_id"]
    assert _trades(apps, readings, condition_id) == _trades(apps, "", market["id"])
    assert _trades(apps, "", condition_id) == _trades(apps, "", market["id"])  # `any`: either id
    with _client(apps, readings) as client:
        for path, params in (("/trades", {"market_id": market["id"]}), ("/price-history", {"market_ids": market["id"]}),
                             (f"/markets/{market['id']}/orderbook", {})):
            refused = client.get(path, params=params)
            assert refused.status_code == 404 and refused.json()["error"]["code"] == "NOT_FOUND", path
        book = client.get(f"/markets/{condition_id}/orderbook", params={"platform": "polymarket"})
        assert book.status_code == 200 and book.json()["data"]["market_id"] == condition_id
    kalshi = _get(apps, "", "/markets", platform="kalshi", limit=1)["markets"][0]
    assert _trades(apps, readings, kalshi["id"]) == _trades(apps, "", kalshi["id"])  # one id: accepted


def test_a_limit_over_the_lowest_documented_maximum_is_refused(apps: dict[str, SandboxApp]) -> None:
    with _client(apps, "over_limit=reject") as client:
        refused = client.get("/markets", params={"platform": "kalshi", "limit": 250})
        assert refused.status_code == 400
        assert "'limit': must be at most 25, got 250" in refused.json()["error"]["message"]
        assert client.get("/markets", params={"platform": "kalshi", "limit": 25}).status_code == 200
        assert client.get("/trades", params={"market_id": "x", "limit": 1000}).status_code == 404  # not a limit


def test_points_of_every_period_overlapping_the_span(apps: dict[str, SandboxApp], market: dict[str, Any]) -> None:
    """price_range=periods: a span starting inside a period gets that period too, under its start."""
    exact = _points(apps, "", market["id"], shift=1800)
    periods = _points(apps, "price_range=periods", market["id"], shift=1800)
    first = {p["timestamp"] for p in periods} - {p["timestamp"] for p in exact}
    assert first == {DAY_START} and len(periods) > len(exact)
    assert [p for p in periods if p["timestamp"] != DAY_START] == exact


def test_trader_trades_under_data(apps: dict[str, SandboxApp]) -> None:
    user = _trades(apps, "", _get(apps, "", "/markets", platform="kalshi", limit=1)["markets"][0]["id"])[0]["user"]
    query = {"platform": "kalshi", "user": user["name"], "limit": 5}
    assert _get(apps, "", "/profile/trades", **query)["trades"] == _get(
        apps, "profile_trades_envelope=data", "/profile/trades", **query)["data"]


def test_a_stale_listing(apps: dict[str, SandboxApp]) -> None:
    """stale_listing: some records as an earlier sync left them (figures, status, end of trading, last_synced_at),
    the listing's data_freshness its stalest record's, a market's own record current."""
    fresh = _get(apps, "", "/markets", platform="polymarket", limit=250)
    stale = _get(apps, "stale_listing=true", "/markets", platform="polymarket", limit=250)
    pairs = list(zip(fresh["markets"], stale["markets"], strict=True))
    older = [(now, then) for now, then in pairs if then["last_synced_at"] < now["last_synced_at"]]
    assert 0 < len(older) < len(pairs) and all(now == then for now, then in pairs if (now, then) not in older)
    assert stale["meta"]["data_freshness"] == min(then["last_synced_at"] for _, then in older)
    assert any(then["volume_total"] < now["volume_total"] for now, then in older)
    assert any(then["trading_end_at"] < now["trading_end_at"] for now, then in older)  # extended since
    assert all(then["last_trades"] is None or max(t["timestamp"] for t in then["last_trades"].values())
               <= then["last_synced_at"] for _, then in older)
    now, _ = older[0]
    assert _get(apps, "stale_listing=true", f"/markets/{now['id']}")["markets"][0] == now


def test_readings_are_checked_and_listed() -> None:
    with pytest.raises(ValueError, match="reading trades_order must be one of newest_first, oldest_first"):
        Readings.parse("trades_order=sideways")
    with pytest.raises(ValueError, match="unknown reading 'colour=red'"):
        Readings.parse("colour=red")
    every = every_other()
    assert Readings.parse(every.label()) == every
    alone = each_alone()
    flags = [f.name for f in fields(Readings) if f.name not in CHOICES]  # the yes/no switches
    assert len(alone) == sum(len(c) - 1 for c in CHOICES.values()) + len(flags)
    assert all(len(r.label().split(",")) == 1 for r in alone)


def _ids(pages: list[dict[str, Any]], key: str) -> list[str]:
    return [item["id"] for page in pages for item in page[key]]


def test_pages_that_overlap_start_with_the_last_items_of_the_page_before(apps: dict[str, SandboxApp]) -> None:
    plain = list(_walk(apps, "", "/markets", "markets", platform="kalshi", limit=10))
    pages = list(_walk(apps, "page_overlap=true", "/markets", "markets", platform="kalshi", limit=10))
    assert all(later["markets"][:2] == earlier["markets"][-2:] for earlier, later in pairwise(pages))
    assert list(dict.fromkeys(_ids(pages, "markets"))) == _ids(plain, "markets")


def test_empty_pages_that_say_there_is_more_come_before_each_page(apps: dict[str, SandboxApp]) -> None:
    plain = list(_walk(apps, "", "/markets", "markets", platform="kalshi", limit=10))
    pages = list(_walk(apps, "empty_pages=true", "/markets", "markets", platform="kalshi", limit=10))
    assert [len(p["markets"]) for p in pages[::2]] == [0] * len(plain)
    assert all(p["pagination"]["has_more"] and p["pagination"]["next_cursor"] for p in pages[::2])
    assert _ids(pages, "markets") == _ids(plain, "markets")


@pytest.mark.parametrize(("reading", "status", "code"), [("validation_error", 400, "VALIDATION_ERROR"),
                                                         ("gone", 410, "GONE")])
def test_the_first_cursor_of_each_listing_is_refused_once(apps: dict[str, SandboxApp], reading: str, status: int,
                                                          code: str) -> None:
    with _client(apps, f"cursor_refusal={reading}") as client:
        for platform in ("kalshi", "polymarket"):  # each listing (its filters) once
            first = client.get("/markets", params={"platform": platform, "limit": 10}).json()
            query = {"platform": platform, "limit": 10, "cursor": first["pagination"]["next_cursor"]}
            refused = client.get("/markets", params=query)
            assert refused.status_code == status and refused.json()["error"]["code"] == code
            assert "cursor" in refused.json()["error"]["message"]
            again = client.get("/markets", params={"platform": platform, "limit": 10}).json()
            assert client.get("/markets", params={**query, "cursor": again["pagination"]["next_cursor"]}).is_success


def test_a_list_asked_without_its_trailing_slash_is_redirected_to_it(apps: dict[str, SandboxApp],
                                                                    market: dict[str, Any]) -> None:
    with _client(apps, "redirect=true") as client:
        moved = client.get("/markets", params={"platform": "kalshi", "limit": 3})
        assert moved.status_code == 307
        assert moved.headers["location"] == "http://sandbox.invalid/markets/?platform=kalshi&limit=3"
        assert client.get(moved.headers["location"]).json()["pagination"]["limit"] == 3
        assert client.get(f"/markets/{market['id']}").status_code == 200  # one item, no list: served where asked


def test_trades_as_recorded_come_oldest_first_with_the_last_trade_of_each_day_after_the_next_days(
        apps: dict[str, SandboxApp], market: dict[str, Any]) -> None:
    oldest = _trades(apps, "trades_order=oldest_first", market["id"], limit=1000)
    recorded = _trades(apps, "trades_order=recorded", market["id"], limit=1000)
    assert sorted(t["trade_id"] for t in recorded) == sorted(t["trade_id"] for t in oldest)
    times = [t["timestamp"] for t in recorded]
    late = [i for i in range(1, len(times)) if times[i] < times[i - 1]]
    assert late and all(times[i - 1] // 86_400 > times[i] // 86_400 for i in late)  # behind the next day's trades
