"""The sandbox against the unified API's specification, endpoint by endpoint."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import httpx
import pytest

from pipeline.engine.schema import (
    ERROR_FIELDS,
    MAX_LIMIT,
    META_FIELDS,
    ORDERBOOK_FIELDS,
    PAGINATION_FIELDS,
    TABLES,
    Field,
    Platform,
)
from pmw_sandbox import SandboxApp, SandboxConfig, SandboxTransport, orderbooks, sandbox_client
from pmw_sandbox.transport import SANDBOX_BASE_URL
from pmw_sandbox.world import users
from tests.support.wire_contract import all_wire_fields, check_record, wire_names
from tests.support.world import (
    PIPELINE_WORLD,
    STRICT_BUDGET,
    TEST_RATE_WINDOW_S,
    WORLD,
    strict_budget_world,
    strict_config,
)

DAY_START = 1_795_219_200  # 2026-11-21T00:00:00Z, the world's last day


def _first_market(client: httpx.Client, platform: str) -> dict[str, Any]:
    return client.get("/markets", params={"platform": platform, "limit": 1}).json()["markets"][0]


def _busiest_market(client: httpx.Client, platform: str) -> dict[str, Any]:
    markets = client.get("/markets", params={"platform": platform, "limit": 250}).json()["markets"]
    return max(markets, key=lambda m: m["volume_total"] or 0)


def _check_meta(meta: dict[str, Any], kind: str) -> None:
    assert set(meta) == set(META_FIELDS[kind]), f"meta of {kind}: {sorted(meta)}"


def _check_list(body: dict[str, Any], items_key: str, table: str, meta_kind: str) -> None:
    assert set(body) == {"pagination", items_key, "meta"}
    check_record(body["pagination"], PAGINATION_FIELDS, "pagination")
    _check_meta(body["meta"], meta_kind)
    assert body[items_key], f"{items_key} is empty"
    for i, record in enumerate(body[items_key]):
        check_record(record, all_wire_fields(TABLES[table]), f"{items_key}[{i}]")


# -- envelopes and field names ---------------------------------------------------------------------


@pytest.mark.parametrize("platform", ["polymarket", "kalshi"])
def test_series_events_markets_lists(client: httpx.Client, platform: str) -> None:
    _check_list(client.get("/series", params={"platform": platform}).json(), "series", "series", "series")
    _check_list(client.get("/events", params={"platform": platform}).json(), "events", "events", "events")
    _check_list(
        client.get("/markets", params={"platform": platform, "limit": 250}).json(), "markets", "markets", "markets"
    )


def test_nested_series_events_and_markets(client: httpx.Client) -> None:
    series = client.get("/series", params={"include_nested": "true", "limit": 1}).json()["series"][0]
    assert series["events"]
    for event in series["events"]:
        check_record(event, all_wire_fields(TABLES["events"]))
        assert event["series_id"] == series["id"]
    event = client.get("/events", params={"with_nested_markets": "true", "limit": 1}).json()["events"][0]
    for market in event["markets"]:
        check_record(market, TABLES["markets"].fields)
        assert market["event_id"] == event["id"]
    assert "events" not in client.get("/series", params={"limit": 1}).json()["series"][0]


def test_single_event_and_market(client: httpx.Client) -> None:
    market = _first_market(client, "kalshi")
    body = client.get(f"/events/{market['event_id']}").json()
    assert set(body) == {"pagination", "events", "meta"}
    _check_meta(body["meta"], "event")
    assert [e["id"] for e in body["events"]] == [market["event_id"]]
    body = client.get(f"/markets/{market['id']}").json()
    _check_meta(body["meta"], "market")
    assert body["markets"][0] == market


def test_trades(client: httpx.Client) -> None:
    for platform in ("polymarket", "kalshi"):
        market = _busiest_market(client, platform)
        body = client.get("/trades", params={"market_id": market["id"], "limit": 50}).json()
        assert set(body) == {"trades", "pagination", "meta"}
        _check_meta(body["meta"], "trades")
        assert body["meta"]["market_id"] == market["id"] and body["meta"]["platform"] == platform
        check_record(body["pagination"], PAGINATION_FIELDS)
        assert len(body["trades"]) == 50
        for trade in body["trades"]:
            check_record(trade, TABLES["trades"].fields)
            assert trade["market_id"] == market["id"]
        stamps = [t["timestamp"] for t in body["trades"]]
        assert stamps == sorted(stamps, reverse=True), "trades come newest first"


def test_taker_only_filter(client: httpx.Client) -> None:
    market = _busiest_market(client, "polymarket")
    everything = client.get("/trades", params={"market_id": market["id"]}).json()
    takers = client.get("/trades", params={"market_id": market["id"], "taker_only": "true"}).json()
    assert takers["pagination"]["total"] < everything["pagination"]["total"]
    assert all(t["taker"] for t in takers["trades"])


def test_price_history(client: httpx.Client) -> None:
    markets = client.get("/markets", params={"platform": "kalshi", "limit": 250}).json()["markets"]
    ids = [m["id"] for m in markets[:3]]
    body = client.get(
        "/price-history",
        params={
            "market_ids": ",".join(ids),
            "start_ts": DAY_START - 7 * 86_400,
            "end_ts": DAY_START + 86_399,
            "interval": 60,
        },
    ).json()
    assert set(body) == {"data", "meta"}
    _check_meta(body["meta"], "price_history")
    assert body["meta"]["total_points"] == len(body["data"]) > 0
    assert body["meta"]["time_range"] == {"start": DAY_START - 7 * 86_400, "end": DAY_START + 86_399}
    for point in body["data"]:
        check_record(point, TABLES["price_history"].fields)
        assert point["timestamp"] % 3600 == 0
        assert point["marketId"] in ids
        p = point["price"]
        assert p["low"] <= min(p["open"], p["close"]) <= max(p["open"], p["close"]) <= p["high"]


def test_polymarket_price_points_carry_the_close_only(client: httpx.Client) -> None:
    market = _busiest_market(client, "polymarket")
    body = client.get(
        "/price-history",
        params={"market_ids": market["id"], "start_ts": DAY_START - 7 * 86_400, "end_ts": DAY_START + 86_399},
    ).json()
    assert body["data"]
    for point in body["data"]:
        assert len(set(point["price"].values())) == 1
        assert point["outcomeId"] in {o["id"] for o in market["outcomes"]}


def test_orderbook(client: httpx.Client) -> None:
    market = _first_market(client, "polymarket")
    body = client.get(f"/markets/{market['id']}/orderbook").json()
    assert set(body) == {"data", "meta"}
    _check_meta(body["meta"], "orderbook")
    check_record(body["data"], ORDERBOOK_FIELDS)
    raw = client.get(f"/markets/{market['id']}/orderbook", params={"include_raw": "true"}).json()
    assert "_raw" in raw["data"]["metadata"]


@pytest.mark.parametrize("platform", ["limitless", "manifold"])
def test_book_only_platforms_serve_their_markets_books(client: httpx.Client, platform: str) -> None:
    for market_id in orderbooks.BOOK_ONLY_MARKETS[Platform(platform)]:
        for params in ({"platform": platform}, {}):  # the platform told, or found from the id
            body = client.get(f"/markets/{market_id}/orderbook", params=params).json()
            check_record(body["data"], ORDERBOOK_FIELDS)
            assert body["data"]["platform"] == platform and body["data"]["market_id"] == market_id
    assert client.get("/markets/btc-above-120k-on-dec-31/orderbook", params={"platform": "manifold"}).status_code == 404


def test_traders_profiles_and_their_trades_walked_once_with_the_cursor() -> None:
    app = SandboxApp(SandboxConfig(world=strict_budget_world(WORLD.end_day)))
    trader = users(Platform.KALSHI)[3]["name"]
    with sandbox_client(app) as c:
        body = c.get("/profile/info", params={"platform": "kalshi", "user": trader, "include_metrics": "true"}).json()
        assert set(body) == {"data", "meta"} and set(body["data"]) == {"profile", "metrics"}
        assert body["data"]["metrics"]["num_markets_traded"] > 0
        assert c.get("/profile/info", params={"platform": "kalshi", "user": trader}).json()["data"]["metrics"] is None
        assert c.get("/profile/info", params={"platform": "kalshi", "user": "nobody"}).status_code == 404
        seen, cursor, pages = [], None, 0
        while True:
            page = c.get("/profile/trades", params={"platform": "kalshi", "user": trader, "limit": 5,
                                                    **({"cursor": cursor} if cursor else {})}).json()
            seen += page["trades"]
            pages += 1
            cursor = page["pagination"]["next_cursor"]
            if not page["pagination"]["has_more"]:
                break
    ids = [t["trade_id"] for t in seen]
    assert pages > 2 and len(ids) == len(set(ids)) == page["pagination"]["total"]
    assert [t["timestamp"] for t in seen] == sorted((t["timestamp"] for t in seen), reverse=True)
    assert all(t["user"]["name"] == trader for t in seen)
    market = app.world.find_market(seen[0]["market_id"])
    assert market is not None
    market_trades = app.world.trade_records(market, 0, app.world.trade_count(market))
    assert seen[0] in market_trades  # a trader's trade is the market's own trade, id and all


def test_health_and_platforms(client: httpx.Client) -> None:
    health = client.get("/health").json()
    assert set(health) == {"data", "meta"} and health["data"]["version"] == "2.0.0"
    assert set(health["data"]) == {"status", "checks", "uptime", "version", "timestamp"}
    _check_meta(health["meta"], "health")
    platforms = client.get("/platforms").json()
    assert set(platforms) == {"platforms", "meta"}
    _check_meta(platforms["meta"], "platforms")
    assert {p["id"] for p in platforms["platforms"]} >= {"polymarket", "kalshi"}
    for p in platforms["platforms"]:
        assert set(p) == {"id", "name", "status", "health", "endpoints", "features"}


# -- authentication --------------------------------------------------------------------------------

ENDPOINTS = [
    "/health",
    "/platforms",
    "/series",
    "/events",
    "/events/x",
    "/markets",
    "/markets/x",
    "/markets/x/orderbook",
    "/trades?market_id=x",
    "/price-history?market_ids=x",
    "/profile/info?platform=kalshi&user=trader3",
    "/profile/trades?platform=kalshi&user=trader3",
    "/nowhere",
]


@pytest.mark.parametrize("path", ENDPOINTS)
@pytest.mark.parametrize("key", [None, "not-a-sandbox-key"])
def test_every_endpoint_needs_a_known_key(shared_app: SandboxApp, path: str, key: str | None) -> None:
    headers = {} if key is None else {"X-API-Key": key}
    with httpx.Client(transport=SandboxTransport(shared_app), base_url=SANDBOX_BASE_URL) as c:
        response = c.get(path, headers=headers)
    assert response.status_code == 401
    assert set(response.json()) == {"error"}
    check_record(response.json()["error"], ERROR_FIELDS)
    assert response.json()["error"]["code"] == "INVALID_API_KEY"


def test_error_bodies_are_error_objects(client: httpx.Client) -> None:
    response = client.get("/markets/no-such-market")
    assert response.status_code == 404
    error = response.json()["error"]
    check_record(error, ERROR_FIELDS)
    assert error["code"] == "NOT_FOUND" and "no-such-market" in error["message"]
    assert client.get("/events/no-such-event").status_code == 404
    assert client.get("/trades", params={"market_id": "nope"}).json()["error"]["code"] == "NOT_FOUND"
    assert client.get("/markets/nope/orderbook").status_code == 404


# -- validation ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "params", "parameter"),
    [
        ("/markets", {"platform": "betfair"}, "platform"),
        ("/markets", {"platform": "polymarket,kalshi"}, "platform"),
        ("/series", {"platform": "limitless"}, "platform"),
        ("/markets", {"limit": "ten"}, "limit"),
        ("/trades", {"market_id": "x", "limit": "1e3"}, "limit"),
        ("/markets", {"limit": "0"}, "limit"),
        ("/markets", {"status": "closed"}, "status"),
        ("/events", {"with_nested_markets": "yes"}, "with_nested_markets"),
        ("/price-history", {"market_ids": "a", "interval": "5"}, "interval"),
        ("/price-history", {"market_ids": "a", "interval": "1h"}, "interval"),
        ("/price-history", {"market_ids": ",".join(str(i) for i in range(11))}, "market_ids"),
        ("/price-history", {"market_ids": "a", "start_ts": "200", "end_ts": "100"}, "start_ts"),
        ("/price-history", {"market_ids": "a", "start_ts": "yesterday"}, "start_ts"),
        ("/price-history", {}, "market_ids"),
        ("/trades", {}, "market_id"),
        ("/markets/x/orderbook", {"platform": "novig"}, "platform"),
        ("/profile/info", {"user": "trader3"}, "platform"),
        ("/profile/info", {"platform": "limitless", "user": "x"}, "platform"),
        ("/profile/info", {"platform": "kalshi"}, "user"),
        ("/profile/info", {"platform": "kalshi", "user": "x" * 101}, "user"),
        ("/profile/trades", {"platform": "kalshi", "user": "trader3", "limit": "0"}, "limit"),
    ],
)
def test_bad_parameters_get_400_naming_the_parameter(
    client: httpx.Client, path: str, params: dict[str, str], parameter: str
) -> None:
    response = client.get(path, params=params)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    check_record(error, ERROR_FIELDS)
    assert error["code"] == "VALIDATION_ERROR"
    assert f"'{parameter}'" in error["message"]


@pytest.mark.parametrize(
    ("path", "resource", "extra"),
    [
        ("/series", "series", {}),
        ("/events", "events", {}),
        ("/markets", "markets", {}),
        ("/trades", "trades", {"market_id": None}),
        ("/price-history", "price_history", {"market_ids": None}),
    ],
)
def test_limits_above_the_maximum_are_capped(
    client: httpx.Client, path: str, resource: str, extra: dict[str, None]
) -> None:
    params: dict[str, Any] = {"limit": 100_000}
    busiest = _busiest_market(client, "kalshi")["id"]
    params.update({k: busiest for k in extra})
    if resource == "price_history":
        params.update({"interval": 1, "start_ts": DAY_START - 7 * 86_400, "end_ts": DAY_START + 86_399})
        body = client.get(path, params=params).json()
        assert len(body["data"]) == MAX_LIMIT["price_history"]
        return
    body = client.get(path, params=params).json()
    assert body["pagination"]["limit"] == MAX_LIMIT[resource]


# -- pagination ------------------------------------------------------------------------------------


def _walk(client: httpx.Client, path: str, key: str, params: dict[str, Any]) -> tuple[list[Any], int]:
    items, cursor, pages = [], None, 0
    while True:
        body = client.get(path, params={**params, **({"cursor": cursor} if cursor else {})}).json()
        pages += 1
        items.extend(body[key])
        cursor = body["pagination"]["next_cursor"]
        assert body["pagination"]["has_more"] == (cursor is not None)
        if cursor is None:
            return items, pages


def test_kalshi_markets_at_limit_500_walk_each_market_once_without_multivariates(client: httpx.Client) -> None:
    first = client.get("/markets", params={"platform": "kalshi", "limit": 500}).json()
    assert first["pagination"]["limit"] == 250 and len(first["markets"]) <= 250
    for page_size in (7, 250):
        markets, pages = _walk(client, "/markets", "markets", {"platform": "kalshi", "limit": page_size})
        ids = [m["id"] for m in markets]
        assert len(ids) == len(set(ids)) == first["pagination"]["total"]
        assert not any(i.startswith("KXMVE") for i in ids)
        assert pages == -(-len(ids) // page_size)


@pytest.mark.parametrize(
    ("path", "key", "params"),
    [
        ("/series", "series", {"limit": 2}),
        ("/events", "events", {"limit": 3}),
        ("/markets", "markets", {"limit": 11}),
    ],
)
def test_cursor_walks_return_every_item_exactly_once(
    client: httpx.Client, path: str, key: str, params: dict[str, Any]
) -> None:
    items, _ = _walk(client, path, key, params)
    ids = [(i["platform"], i["id"]) for i in items]
    assert len(ids) == len(set(ids))
    everything = client.get(path, params={"limit": 100}).json()
    assert len(ids) == everything["pagination"]["total"]


def test_trade_walk_returns_every_trade_once(client: httpx.Client) -> None:
    market = _busiest_market(client, "kalshi")
    trades, pages = _walk(client, "/trades", "trades", {"market_id": market["id"], "limit": 1000})
    ids = [t["trade_id"] for t in trades]
    assert pages > 1
    assert (
        len(ids)
        == len(set(ids))
        == client.get("/trades", params={"market_id": market["id"]}).json()["pagination"]["total"]
    )


def test_multivariate_markets_never_appear(shared_app: SandboxApp, client: httpx.Client) -> None:
    from pipeline.engine.schema import Platform

    mve = [m for m in shared_app.world.all_markets(Platform.KALSHI) if m.multivariate]
    assert mve
    markets, _ = _walk(client, "/markets", "markets", {"limit": 250})
    events, _ = _walk(client, "/events", "events", {"limit": 100, "with_nested_markets": "true"})
    nested = [m["id"] for e in events for m in e["markets"]]
    visible = {m["id"] for m in markets} | set(nested) | {e["id"] for e in events}
    assert not visible & ({m.id for m in mve} | {m.event_id for m in mve})
    for m in mve[:2]:
        assert client.get(f"/markets/{m.id}").status_code == 404
        assert client.get("/trades", params={"market_id": m.id}).status_code == 404


def test_cursor_is_bound_to_its_filters(client: httpx.Client) -> None:
    body = client.get("/markets", params={"platform": "kalshi", "limit": 5}).json()
    cursor = body["pagination"]["next_cursor"]
    assert client.get("/markets", params={"platform": "kalshi", "limit": 9, "cursor": cursor}).status_code == 200
    for params in ({"platform": "polymarket"}, {"platform": "kalshi", "status": "open"}, {}):
        response = client.get("/markets", params={**params, "limit": 5, "cursor": cursor})
        assert response.status_code == 400
        assert response.json()["error"]["code"] == "INVALID_CURSOR"
    forged = cursor[:-1] + ("0" if cursor[-1] != "0" else "1")
    assert client.get("/markets", params={"platform": "kalshi", "cursor": forged}).json()["error"]["code"] == (
        "INVALID_CURSOR"
    )


def test_cursor_expires(clock) -> None:
    app = SandboxApp(SandboxConfig(world=WORLD, cursor_ttl_s=30), clock=clock)
    with sandbox_client(app) as c:
        cursor = c.get("/markets", params={"limit": 5}).json()["pagination"]["next_cursor"]
        clock.advance(29)
        assert c.get("/markets", params={"limit": 5, "cursor": cursor}).status_code == 200
        cursor = c.get("/markets", params={"limit": 5}).json()["pagination"]["next_cursor"]
        clock.advance(31)
        expired = c.get("/markets", params={"limit": 5, "cursor": cursor})
        assert expired.status_code == 400
        assert expired.json()["error"]["code"] == "INVALID_CURSOR" and "expired" in expired.json()["error"]["message"]


# -- rate limit ------------------------------------------------------------------------------------


def test_strict_mode_refuses_the_101st_request_in_a_minute(clock) -> None:
    app = SandboxApp(SandboxConfig.strict(world=WORLD), clock=clock)
    with sandbox_client(app) as c:
        for _ in range(100):
            assert c.get("/health").status_code == 200
            clock.advance(0.5)
        refused = c.get("/health")
        assert refused.status_code == 429
        assert refused.json()["error"]["code"] == "RATE_LIMITED"
        check_record(refused.json()["error"], ERROR_FIELDS)
        retry_after = int(refused.headers["Retry-After"])
        assert 1 <= retry_after <= 60
        clock.advance(retry_after)
        assert c.get("/health").status_code == 200
        # The budget is per key: another key still has all of its own.
        assert c.get("/health", headers={"X-API-Key": app.config.api_keys[1]}).status_code == 200


def test_a_configured_rate_window_counts_the_budget_and_sets_retry_after(clock) -> None:
    """The same 100 requests counted per TEST_RATE_WINDOW_S: the 101st inside it is refused until the window's
    first request is a window old, and Retry-After says when; a default (one-minute) app still refuses then."""
    app = SandboxApp(strict_config(world=WORLD), clock=clock)
    minute = SandboxApp(SandboxConfig.strict(world=WORLD), clock=clock)
    step = TEST_RATE_WINDOW_S / 192  # exact in binary, so the fake clock adds it exactly; 100 span about half
    with sandbox_client(app) as c, sandbox_client(minute) as m:
        for _ in range(STRICT_BUDGET):
            assert c.get("/health").status_code == 200
            assert m.get("/health").status_code == 200
            clock.advance(step)
        refused = c.get("/health")
        assert refused.status_code == 429
        assert refused.json()["error"]["code"] == "RATE_LIMITED"
        assert f"of {STRICT_BUDGET} requests per {TEST_RATE_WINDOW_S:g} s" in refused.json()["error"]["message"]
        retry_after = int(refused.headers["Retry-After"])
        wait_s = TEST_RATE_WINDOW_S - STRICT_BUDGET * step  # until the first request leaves the window
        assert retry_after == max(1, math.ceil(wait_s))
        assert refused.json()["error"]["details"]["retry_after"] == retry_after
        clock.advance(wait_s - step / 2)
        assert c.get("/health").status_code == 429  # not yet a window since the first request
        clock.advance(retry_after - wait_s + step / 2)
        assert c.get("/health").status_code == 200
        late = m.get("/health")  # the same requests, the same time: a minute's window still holds them all
        assert late.status_code == 429 and "per minute" in late.json()["error"]["message"]
        assert int(late.headers["Retry-After"]) > TEST_RATE_WINDOW_S


# -- determinism -----------------------------------------------------------------------------------

REQUESTS = [
    ("/series", {"include_nested": "true"}),
    ("/events", {"limit": 100}),
    ("/markets", {"limit": 250}),
    ("/markets", {"platform": "kalshi", "limit": 3}),
    ("/platforms", {}),
    ("/trades", {"market_id": "KXHIGHNY-26NOV21-B44.5", "limit": 1000}),
    (
        "/price-history",
        {"market_ids": "KXHIGHNY-26NOV21-B44.5", "interval": 1, "start_ts": DAY_START, "end_ts": DAY_START + 86_399},
    ),
]


def _responses(seed: int) -> list[bytes]:
    """The bytes of every endpoint asked, in the pipeline tests' world (a quarter of the markets of the default
    world: the same endpoints and code paths) of this seed."""
    app = SandboxApp(SandboxConfig(world=replace(PIPELINE_WORLD, seed=seed)))
    with sandbox_client(app) as c:
        markets = c.get("/markets", params={"limit": 250}).json()["markets"]
        ids = [m["id"] for m in markets[:10]]
        extra = [
            ("/trades", {"market_id": ids[0], "limit": 1000}),
            ("/price-history", {"market_ids": ",".join(ids), "start_ts": DAY_START - 86_400}),
            (
                "/price-history",
                {"market_ids": ids[0], "interval": 1, "start_ts": DAY_START, "end_ts": DAY_START + 86_399},
            ),
            (f"/markets/{ids[1]}/orderbook", {}),
        ]
        return [c.get(path, params=params).content for path, params in REQUESTS + extra]


def test_same_seed_same_bytes_other_seed_other_bytes() -> None:
    first = _responses(WORLD.seed)
    assert first == _responses(WORLD.seed)
    assert first[2] != _responses(WORLD.seed + 1)[2]


def test_documented_wire_names_come_from_the_schema() -> None:
    # The contract checks above read every field name from pipeline/engine/schema/; guard that it is complete.
    assert wire_names(TABLES["price_history"].fields) >= {"marketId", "openInterest", "bidAsk", "outcomeId"}
    assert isinstance(TABLES["markets"].field("metadata"), Field)


def test_same_bytes_across_processes() -> None:
    import hashlib
    import os
    import subprocess
    import sys

    script = (
        "import hashlib; from tests.sandbox.test_api_contract import _responses; "
        f"print(hashlib.sha256(b''.join(_responses({WORLD.seed}))).hexdigest())"
    )
    digests = {
        subprocess.run(
            [sys.executable, "-c", script],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": str(hash_seed)},
        ).stdout.strip()
        for hash_seed in (1, 2)
    }
    assert digests == {hashlib.sha256(b"".join(_responses(WORLD.seed))).hexdigest()}
