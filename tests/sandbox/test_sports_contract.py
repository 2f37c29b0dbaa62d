"""The sandbox's sports endpoints against the spec: envelopes, fields, filters, the 401, 400, 404 and 429 rules of
every endpoint, faults, its readings, and a world whose platforms cover it unevenly with odds that move by day."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import Any

import httpx
import pytest

from pipeline.engine.schema import (
    AWARDS,
    ERROR_FIELDS,
    FUTURE_MARKET,
    FUTURES,
    LEAGUES,
    META_FIELDS,
    SPORTS_PLATFORMS,
    TEAMS,
    League,
)
from pmw_sandbox import SandboxApp, SandboxConfig, SandboxTransport, sandbox_client
from pmw_sandbox.faults import Faults
from pmw_sandbox.readings import Readings
from pmw_sandbox.transport import SANDBOX_BASE_URL
from tests.support.wire_contract import all_wire_fields, check_record
from tests.support.world import STRICT_BUDGET, WORLD, strict_config

DETAIL_FIELDS = {"id", "future_name", "league", "season", "future_type", "category", "metadata", "markets"}


def _details(client: httpx.Client, league: str = "nba") -> list[dict[str, Any]]:
    futures = client.get("/list-futures", params={"league": league}).json()["data"]["futures"]
    return [client.get(f"/futures/{future['id']}").json()["data"] for future in futures]


def test_league_info(client: httpx.Client) -> None:
    body = client.get("/league-info", params={"league": "nhl", "include_teams": "true"}).json()
    assert set(body) == {"data", "meta"} and set(body["meta"]) == set(META_FIELDS["league_info"])
    check_record(body["data"], all_wire_fields(LEAGUES))
    assert body["data"]["id"] == "nhl" and body["data"]["counts"]["teams"] == len(body["data"]["teams"]) == 32
    for team in body["data"]["teams"]:
        check_record(team, TEAMS.fields)
        assert set(team["platform_ids"]) <= set(SPORTS_PLATFORMS)
    assert "teams" not in client.get("/league-info", params={"league": "nhl"}).json()["data"]
    every = client.get("/league-info").json()["data"]  # the sandbox's reading of "all leagues are returned"
    assert [league["id"] for league in every] == list(League)


@pytest.mark.parametrize(("path", "key", "table"), [("/list-futures", "futures", FUTURES),
                                                     ("/list-awards", "awards", AWARDS)])
def test_lists_and_their_filters(client: httpx.Client, path: str, key: str, table: Any) -> None:
    body = client.get(path, params={"league": "mlb"}).json()
    assert set(body) == {"data", "meta"} and set(body["data"]) == {key}
    assert set(body["meta"]) == set(META_FIELDS["sports"])
    items = body["data"][key]
    for item in items:
        check_record(item, all_wire_fields(table))
        assert item["league"] == "mlb" and set(item["platform_markets"]) <= set(SPORTS_PLATFORMS)
    on_sxbet = client.get(path, params={"league": "mlb", "platform": "sxbet"}).json()["data"][key]
    assert 0 < len(on_sxbet) < len(items), "not every platform lists every future or award"
    assert all("sxbet" in item["platform_markets"] for item in on_sxbet)
    kind = f"{key[:-1]}_type"
    first_type = items[0][kind]
    typed = client.get(path, params={"league": "mlb", kind: first_type}).json()["data"][key]
    assert typed and {item[kind] for item in typed} == {first_type}


def test_future_and_award_details(client: httpx.Client) -> None:
    details = _details(client)
    award = client.get("/list-awards", params={"league": "nba"}).json()["data"]["awards"][0]
    award_body = client.get(f"/awards/{award['id']}").json()
    assert set(award_body["meta"]) == set(META_FIELDS["sports"])
    for detail in [*details, award_body["data"]]:
        assert set(detail) == DETAIL_FIELDS
        for market in detail["markets"]:
            check_record(market, FUTURE_MARKET)
            for outcome in market["outcomes"]:
                odds = outcome["odds"]
                assert abs(odds["implied_probability"] * odds["decimal"] - 1) < 1e-3
    assert client.get("/futures/no-such-future").json()["error"]["code"] == "NOT_FOUND"
    assert client.get(f"/futures/{award['id']}").status_code == 404  # an award is served at /awards/{id}


def test_platforms_take_margins_of_their_own_and_cover_the_field_unevenly(client: httpx.Client) -> None:
    sums: dict[str, list[float]] = {}
    priced_once = 0
    for detail in _details(client):
        listing: dict[str, int] = {}
        for market in detail["markets"]:
            sums.setdefault(market["platform"], []).append(
                sum(o["odds"]["implied_probability"] for o in market["outcomes"]))
            for outcome in market["outcomes"]:
                listing[outcome["team_router_id"]] = listing.get(outcome["team_router_id"], 0) + 1
        if len(detail["markets"]) > 1:
            priced_once += sum(count == 1 for count in listing.values())
    assert all(total > 1 for totals in sums.values() for total in totals)
    margins = {platform: sum(totals) / len(totals) - 1 for platform, totals in sums.items()}
    assert len(margins) == len(SPORTS_PLATFORMS) and len({round(m, 3) for m in margins.values()}) == len(margins)
    assert priced_once > 0, "some outcome is priced by one platform only"
    teams = client.get("/league-info", params={"league": "nba", "include_teams": "true"}).json()["data"]["teams"]
    assert any(len(team["platform_ids"]) < len(SPORTS_PLATFORMS) for team in teams)


def test_odds_move_from_day_to_day() -> None:
    small = replace(WORLD, series_per_platform=1, events_per_series=1, markets_per_event=1)  # markets are not the point
    next_day = SandboxApp(SandboxConfig(world=replace(small, end=small.end_day + timedelta(days=1))))
    with sandbox_client(SandboxApp(SandboxConfig(world=small))) as today, sandbox_client(next_day) as tomorrow:
        first, second = _details(today, "nhl"), _details(tomorrow, "nhl")
    assert [d["id"] for d in first] == [d["id"] for d in second]
    odds = [[o["odds"]["decimal"] for m in d["markets"] for o in m["outcomes"]] for d in (first[0], second[0])]
    assert odds[0] != odds[1]


SPORTS_ENDPOINTS = ["/league-info", "/list-futures?league=nba", "/list-awards?league=nba",
                    "/futures/nba-2026-championship", "/awards/nba-2026-mvp"]


@pytest.mark.parametrize("path", SPORTS_ENDPOINTS)
@pytest.mark.parametrize("key", [None, "not-a-sandbox-key"])
def test_every_sports_endpoint_needs_a_known_key(shared_app: SandboxApp, path: str, key: str | None) -> None:
    headers = {} if key is None else {"X-API-Key": key}
    with httpx.Client(transport=SandboxTransport(shared_app), base_url=SANDBOX_BASE_URL) as c:
        response = c.get(path, headers=headers)
    assert response.status_code == 401
    check_record(response.json()["error"], ERROR_FIELDS)
    assert response.json()["error"]["code"] == "INVALID_API_KEY"


@pytest.mark.parametrize(
    ("path", "params", "parameter"),
    [
        ("/league-info", {"league": "epl"}, "league"),
        ("/league-info", {"include_teams": "yes"}, "include_teams"),
        ("/list-futures", {}, "league"),
        ("/list-futures", {"league": "NBA"}, "league"),
        ("/list-futures", {"league": "nba", "platform": "limitless"}, "platform"),
        ("/list-awards", {"league": "nba", "platform": "kalshi,novig"}, "platform"),
        ("/list-awards", {}, "league"),
    ],
)
def test_bad_sports_parameters_get_400_naming_the_parameter(
    client: httpx.Client, path: str, params: dict[str, str], parameter: str
) -> None:
    response = client.get(path, params=params)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    check_record(error, ERROR_FIELDS)
    assert error["code"] == "VALIDATION_ERROR" and f"'{parameter}'" in error["message"]


def test_sports_requests_spend_the_rate_limit_and_meet_faults(clock) -> None:
    app = SandboxApp(strict_config(world=WORLD), clock=clock)
    with sandbox_client(app) as c:
        for _ in range(STRICT_BUDGET):
            assert c.get("/list-awards", params={"league": "nfl"}).status_code == 200
        refused = c.get("/futures/nfl-2026-championship")
        assert refused.status_code == 429 and refused.json()["error"]["code"] == "RATE_LIMITED"
        assert int(refused.headers["Retry-After"]) >= 1
    faulty = SandboxApp(SandboxConfig(world=WORLD, faults=Faults(error_rate=1.0)))
    with sandbox_client(faulty) as c:
        assert c.get("/league-info", params={"league": "nfl"}).status_code in (500, 503)


def test_readings_of_american_odds_and_of_the_award_detail() -> None:
    readings = Readings(american_odds="bare", award_detail="futures", list_order="reversed")
    with sandbox_client(SandboxApp(SandboxConfig(world=WORLD, readings=readings))) as c:
        americans = [o["odds"]["american"] for d in _details(c, "nfl") for m in d["markets"] for o in m["outcomes"]]
        assert not any(a.startswith("+") for a in americans) and any(not a.startswith("-") for a in americans)
        assert c.get("/awards/nfl-2026-mvp").status_code == 404
        assert c.get("/futures/nfl-2026-mvp").json()["data"]["id"] == "nfl-2026-mvp"
