"""The shared HTTP layer: retries, budget, counters, and a key that never leaks (paging: test_paging.py)."""

from __future__ import annotations

import gzip
import json
import ssl
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from pipeline.engine.config import Secret
from pipeline.engine.sources import http
from pipeline.engine.sources.http import ApiError, HttpLayer, endpoint_of, tls_context
from pipeline.engine.sources.request_budget import RequestBudget

KEY = "sk-live-DO-NOT-LEAK-0042"


def _layer(
    handler: Callable[[httpx.Request], httpx.Response], sleeps: list[float] | None = None, **kwargs
) -> HttpLayer:
    record = sleeps if sleeps is not None else []
    return HttpLayer(
        "http://api.test", api_key=Secret(KEY), transport=httpx.MockTransport(handler), sleep=record.append, **kwargs
    )


def _error(status: int, code: str, message: str = "nope", headers: dict[str, str] | None = None) -> httpx.Response:
    body = {"error": {"code": code, "message": message, "timestamp": "2026-11-21T00:00:00Z"}}
    return httpx.Response(status, json=body, headers=headers)


def test_the_key_travels_in_the_header() -> None:
    seen = []
    layer = _layer(lambda r: (seen.append(r.headers.get("X-API-Key")), httpx.Response(200, json={}))[1])
    layer.get_json("/health")
    assert seen == [KEY]


def test_clients_share_one_verifying_tls_context(monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[ssl.SSLContext] = []

    def create_ssl_context() -> ssl.SSLContext:
        built.append(context := ssl.create_default_context())
        return context

    monkeypatch.setattr(http.httpx, "create_ssl_context", create_ssl_context)
    tls_context.cache_clear()
    try:
        for _ in range(3):
            HttpLayer("https://api.test").close()
        assert len(built) == 1, "the CA bundle is loaded once per process, not once per client"
        assert tls_context() is built[0]
        assert (built[0].verify_mode, built[0].check_hostname) == (ssl.CERT_REQUIRED, True)
    finally:
        tls_context.cache_clear()


def test_retries_transient_failures_honouring_retry_after() -> None:
    answers = iter(
        [
            _error(429, "RATE_LIMITED", headers={"Retry-After": "7"}),
            _error(503, "PLATFORM_UNAVAILABLE"),
            httpx.Response(502, text="<html>bad gateway</html>"),
            httpx.Response(200, text='{"data": [1, 2'),  # cut JSON
            httpx.Response(200, json={"data": [1, 2]}),
        ]
    )
    sleeps: list[float] = []
    layer = _layer(lambda r: next(answers), sleeps)
    assert layer.get_json("/price-history") == {"data": [1, 2]}
    assert layer.stats.requests == 5 and layer.stats.retries == 4 and layer.stats.rate_limited == 1
    assert 7 <= sleeps[0] <= 7.25  # the server's hint, plus a little jitter
    assert all(0 <= s <= 60 for s in sleeps[1:])
    assert layer.stats.waited_s == pytest.approx(sum(sleeps))


def test_retry_after_in_the_error_details_is_honoured() -> None:
    answers = iter(
        [
            httpx.Response(
                503,
                json={
                    "error": {
                        "code": "PLATFORM_UNAVAILABLE",
                        "message": "x",
                        "timestamp": "t",
                        "details": {"retry_after": 3},
                    }
                },
            ),
            httpx.Response(200, json={}),
        ]
    )
    sleeps: list[float] = []
    _layer(lambda r: next(answers), sleeps).get_json("/markets")
    assert 3 <= sleeps[0] <= 3.25


def test_connection_errors_and_timeouts_are_retried() -> None:
    calls = []

    def flaky(request: httpx.Request) -> httpx.Response:
        calls.append(1)
        if len(calls) == 1:
            raise httpx.ConnectError("connection refused", request=request)
        if len(calls) == 2:
            raise httpx.ReadTimeout("slow", request=request)
        return httpx.Response(200, json={"ok": True})

    assert _layer(flaky).get_json("/health") == {"ok": True}
    assert len(calls) == 3


def test_gives_up_with_a_clear_error_after_the_last_attempt() -> None:
    layer = _layer(lambda r: _error(500, "INTERNAL_ERROR", "boom"), max_attempts=3)
    with pytest.raises(ApiError, match=r"GET /markets failed after 3 attempts: 500 INTERNAL_ERROR: boom"):
        layer.get_json("/markets")
    assert layer.stats.requests == 3


@pytest.mark.parametrize(("status", "code"), [(400, "VALIDATION_ERROR"), (401, "INVALID_API_KEY"), (404, "NOT_FOUND")])
def test_client_errors_are_not_retried(status: int, code: str) -> None:
    layer = _layer(lambda r: _error(status, code, "bad"))
    with pytest.raises(ApiError) as caught:
        layer.get_json("/markets/KX-1")
    assert caught.value.status == status and caught.value.code == code
    assert layer.stats.requests == 1
    assert "/markets/{id}" in str(caught.value)


def test_a_body_that_echoes_the_key_is_redacted_everywhere(caplog: pytest.LogCaptureFixture) -> None:
    def echo(request: httpx.Request) -> httpx.Response:
        return _error(
            500 if "retry" in request.url.path else 400,
            "ECHO",
            f"bad request headers: X-API-Key={request.headers['X-API-Key']}",
        )

    for path in ("/retry", "/fail"):
        layer = _layer(echo, max_attempts=2)
        with caplog.at_level("DEBUG"), pytest.raises(ApiError) as caught:
            layer.get_json(path)
        assert KEY not in str(caught.value) and "***" in str(caught.value)
        assert KEY not in repr(caught.value.__context__) if caught.value.__context__ else True
        assert KEY not in json.dumps(layer.stats.as_metadata())
    assert KEY not in caplog.text
    assert KEY not in repr(Secret(KEY))


def test_endpoint_names_hide_ids() -> None:
    assert endpoint_of("/markets/KXBTCD-26NOV21-T90000/orderbook") == "/markets/{id}/orderbook"
    assert endpoint_of("/events/123") == "/events/{id}"
    assert endpoint_of("/trades") == "/trades"
    assert endpoint_of("/markets/trades") == "/markets/trades"  # Kalshi's
    assert endpoint_of("/series/KXBTCD/markets/KXBTCD-26NOV21-T90000/candlesticks") == (
        "/series/{id}/markets/{id}/candlesticks"
    )
    assert endpoint_of("/historical/markets/KX-1/candlesticks") == "/historical/markets/{id}/candlesticks"


@pytest.mark.slow
def test_budget_is_shared_by_processes(tmp_path: Path) -> None:
    """Three processes, 12 requests each, 10 allowed per 1.5 s window: never more than 10 in any window.

    Each process notes the time just after the budget admits a request, a little later than the admission on a
    loaded machine (a margin of 0.1 s once let 11 notes fall inside one window in CI); the budget's margin of
    0.4 s absorbs that, as the pipeline's 2 s margin absorbs the trip to the server."""
    db = tmp_path / "budget.sqlite"
    script = textwrap.dedent(f"""
        import json, time
        from pathlib import Path
        from pipeline.engine.sources.request_budget import RequestBudget
        budget = RequestBudget("test", 10, Path({str(db)!r}), window_s=1.5, margin_s=0.4)
        stamps = []
        for _ in range(12):
            budget.acquire()
            stamps.append(time.time())
        print(json.dumps(stamps))
    """)
    processes = [subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True) for _ in range(3)]
    stamps = sorted(t for p in processes for t in json.loads(p.communicate(timeout=60)[0]))
    assert len(stamps) == 36
    busiest = max(sum(1 for t in stamps if start <= t < start + 1.5) for start in stamps)
    assert busiest <= 10
    assert stamps[-1] - stamps[0] >= 3 * 1.5  # 36 requests at 10 per window need at least 3 more windows


def test_budget_refuses_nonsense(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="at least 1 request"):
        RequestBudget("x", 0, tmp_path / "b.sqlite")


def test_an_error_page_echoing_the_key_at_the_cut_leaks_no_piece_of_it() -> None:
    for at in (100, 110, 119):
        page = "<html><body>" + "x" * (at - 12) + f"{KEY} was refused</body></html>"
        layer = _layer(lambda _request, page=page: httpx.Response(502, text=page), max_attempts=1)
        with pytest.raises(ApiError) as caught:
            layer.get_json("/markets")
        message = str(caught.value)
        assert not [KEY[i : i + 8] for i in range(len(KEY) - 7) if KEY[i : i + 8] in message], (at, message)


def test_an_answer_trickling_in_past_the_deadline_is_given_up_naming_the_bound() -> None:
    """Issue "Nothing lost", point 5: a byte now and then never trips the timeout, which counts the wait for each
    byte; the deadline counts the whole answer."""
    def drip() -> Iterator[bytes]:
        for byte in b'{"markets": []}' * 10:
            time.sleep(0.01)
            yield bytes([byte])

    layer = _layer(lambda r: httpx.Response(200, content=drip()), max_attempts=2, deadline_s=0.2, timeout_s=5)
    started = time.monotonic()
    with pytest.raises(ApiError, match=r"GET /markets: no whole answer within the deadline of 0.2 s "
                                       r"\(PMW_HTTP_DEADLINE_S\), still waiting for the body \(\d+ bytes read\)"):
        layer.get_json("/markets")
    assert time.monotonic() - started < 1  # one try of 0.2 s (not retried), not the 3 s the drip would take


def test_a_body_inflating_past_the_limit_is_refused_without_retrying_or_holding_it() -> None:
    """Issue "Nothing lost", point 4: a small gzip answer that inflates to 16 MiB is cut at the limit."""
    bomb = gzip.compress(b" " * (16 * http.MIB), compresslevel=1)
    calls = []
    layer = _layer(lambda r: (calls.append(1), httpx.Response(200, content=bomb, headers={
        "Content-Encoding": "gzip", "Content-Type": "application/json"}))[1], max_body_bytes=http.MIB)
    with pytest.raises(ApiError, match=r"GET /trades answered a body of more than 1,048,576 bytes \(PMW_MAX_BODY_MB\)"):
        layer.get_json("/trades")
    assert len(bomb) < 100_000 and calls == [1]


# -- redirects ------------------------------------------------------------------------------------------------


def _moved(location: str, status: int = 307) -> httpx.Response:
    return httpx.Response(status, headers={"location": location})


@pytest.mark.parametrize("location", ["http://api.test/markets/?platform=kalshi", "/markets/?platform=kalshi"])
def test_a_redirect_on_the_apis_origin_is_followed_with_the_key_each_hop_a_request(location: str) -> None:
    seen: list[tuple[str, str | None]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append((str(request.url), request.headers.get("X-API-Key")))
        return httpx.Response(200, json={"ok": True}) if request.url.path.endswith("/") else _moved(location)

    layer = _layer(handler)
    assert layer.get_json("/markets", {"platform": "kalshi"}) == {"ok": True}
    assert seen == [("http://api.test/markets?platform=kalshi", KEY), ("http://api.test/markets/?platform=kalshi", KEY)]
    assert layer.stats.requests == 2 and layer.stats.by_endpoint == {"/markets": 2} and layer.stats.retries == 0


@pytest.mark.parametrize("location", ["https://api.test/markets/", "http://elsewhere.test/markets/",
                                      "http://api.test:8080/markets/"])
def test_a_redirect_to_another_origin_is_an_error_naming_status_and_location_and_the_key_stays(location: str) -> None:
    seen: list[httpx.Request] = []
    layer = _layer(lambda request: (seen.append(request), _moved(location, 308))[1])
    with pytest.raises(ApiError, match=f"GET /markets answered 308 to {location}: another origin") as raised:
        layer.get_json("/markets")
    assert [str(r.url) for r in seen] == ["http://api.test/markets"] and raised.value.status == 308


def test_redirects_that_go_round_are_given_up_and_one_without_a_location_is_named() -> None:
    with pytest.raises(ApiError, match=r"answered 307 to http://api\.test/a: 5 redirects in a row"):
        _layer(lambda request: _moved("/b" if request.url.path == "/a" else "/a")).get_json("/a")
    with pytest.raises(ApiError, match="GET /markets answered 302 without a Location"):
        _layer(lambda request: httpx.Response(302)).get_json("/markets")
