"""Each reading of the sandbox changes its answers as docs/api-readings.md says, and nothing else."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from pmw_sandbox import SandboxApp, SandboxConfig, sandbox_client
from pmw_sandbox.readings import CHOICES, Readings
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
    assert {p["pagination"]["total"] for p in pages} != {total}
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


def test_readings_are_checked_and_listed() -> None:
    with pytest.raises(ValueError, match="reading trades_order must be one of newest_first, oldest_first"):
        Readings.parse("trades_order=sideways")
    with pytest.raises(ValueError, match="unknown reading 'colour=red'"):
        Readings.parse("colour=red")
    every = Readings.every_other()
    assert Readings.parse(every.label()) == every
    alone = Readings.each_alone()
    assert len(alone) == sum(len(c) - 1 for c in CHOICES.values()) + 2  # and the two yes/no switches
    assert all(len(r.label().split(",")) == 1 for r in alone)
