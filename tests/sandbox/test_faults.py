"""Each fault switch of the sandbox does what it says, deterministically."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from pmw_sandbox import Faults, SandboxApp, SandboxConfig, sandbox_client
from tests.support.world import WORLD


def _client(clock=None, **faults: Any) -> httpx.Client:
    config = SandboxConfig(world=WORLD, faults=Faults(**faults))
    app = SandboxApp(config, clock=clock) if clock else SandboxApp(config)
    return sandbox_client(app)


def test_faults_parse_and_reject_nonsense() -> None:
    assert Faults.parse("error_rate=0.05, unknown_fields=true,duplicate_items=2") == Faults(
        error_rate=0.05, unknown_fields=True, duplicate_items=2
    )
    with pytest.raises(ValueError, match="unknown fault 'explode=1'"):
        Faults.parse("explode=1")
    with pytest.raises(ValueError, match="error_rate needs a float"):
        Faults.parse("error_rate=lots")
    with pytest.raises(ValueError, match="between 0 and 1"):
        Faults(error_rate=1.5)


def test_error_rate_answers_500_and_503_with_error_objects() -> None:
    with _client(error_rate=0.3) as c:
        statuses = [c.get("/health") for _ in range(200)]
    codes = [r.status_code for r in statuses]
    assert 40 < codes.count(500) + codes.count(503) < 80
    assert {500, 503} <= set(codes)
    unavailable = next(r for r in statuses if r.status_code == 503)
    assert unavailable.json()["error"]["code"] == "PLATFORM_UNAVAILABLE"
    assert unavailable.headers["Retry-After"] == "1"


def test_faults_are_deterministic() -> None:
    runs = []
    for _ in range(2):
        with _client(error_rate=0.3, malformed_page_rate=0.2) as c:
            runs.append([(r.status_code, r.content[:40]) for r in (c.get("/series") for _ in range(30))])
    assert runs[0] == runs[1]


def test_429_bursts() -> None:
    with _client(burst_429_every=10, burst_429_length=3) as c:
        codes = [c.get("/health").status_code for _ in range(30)]
    assert codes == ([200] * 7 + [429] * 3) * 3
    with _client(burst_429_every=10, burst_429_length=3) as c:
        for _ in range(7):
            c.get("/health")
        refused = c.get("/health")
    assert refused.json()["error"]["code"] == "RATE_LIMITED" and "Retry-After" in refused.headers


def test_latency(clock) -> None:
    import time

    with _client(latency_ms=80) as c:
        started = time.perf_counter()
        c.get("/health")
        assert time.perf_counter() - started >= 0.08


def test_malformed_pages_are_cut_json() -> None:
    with _client(malformed_page_rate=1.0) as c:
        response = c.get("/markets")
    assert response.status_code == 200
    with pytest.raises(json.JSONDecodeError):
        json.loads(response.content)


def test_duplicated_items_across_page_boundaries() -> None:
    with _client(duplicate_items=2) as c:
        first = c.get("/markets", params={"limit": 10}).json()
        second = c.get("/markets", params={"limit": 10, "cursor": first["pagination"]["next_cursor"]}).json()
        assert [m["id"] for m in second["markets"][:2]] == [m["id"] for m in first["markets"][-2:]]
        # A full walk still ends, and every market is in it.
        seen, cursor = [], None
        while True:
            body = c.get("/markets", params={"limit": 10, **({"cursor": cursor} if cursor else {})}).json()
            seen += [m["id"] for m in body["markets"]]
            cursor = body["pagination"]["next_cursor"]
            if cursor is None:
                break
        assert len(set(seen)) == first["pagination"]["total"] < len(seen)


def test_unknown_fields_on_records_and_envelopes() -> None:
    with _client(unknown_fields=True) as c:
        body = c.get("/markets", params={"limit": 3}).json()
    assert "x_sandbox_trace" in body
    assert all("x_sandbox_unknown" in m for m in body["markets"])


def test_cursor_expiry_fault() -> None:
    with _client(cursor_expiry_rate=1.0) as c:
        cursor = c.get("/markets", params={"limit": 5}).json()["pagination"]["next_cursor"]
        response = c.get("/markets", params={"limit": 5, "cursor": cursor})
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "INVALID_CURSOR"
