"""A market asked by its service id and refused 404 is asked once more by its platform id, and the platform's other
markets by theirs first: one extra request per session, not per market; rows belong to the market asked for."""

from __future__ import annotations

from collections import Counter
from datetime import date

import pytest

from pipeline.engine.config import Secret
from pipeline.engine.sources.http import ApiError, HttpLayer
from pipeline.engine.sources.market_ids import MarketIdParam
from pipeline.engine.sources.unified import UnifiedSource
from pmw_sandbox import SandboxApp, SandboxConfig
from pmw_sandbox.catalogue import WorldConfig
from pmw_sandbox.readings import Readings
from pmw_sandbox.transport import SANDBOX_BASE_URL, SandboxTransport
from tests.support.world import is_live_on

DAY = date(2026, 11, 21)
WORLD = WorldConfig(seed=3, end=DAY, days=2, series_per_platform=2, events_per_series=2, markets_per_event=3,
                    trades_per_market_day=30, multivariate_markets=0)


class Server:
    """Knows markets by the ids in `known` only; records what it was asked."""

    def __init__(self, known: set[str]) -> None:
        self.known, self.asked = known, []

    def __call__(self, ids: list[str]) -> list[str]:
        self.asked.append(ids)
        if not set(ids) <= self.known:
            raise ApiError("GET /trades answered 404 NOT_FOUND: market not found", 404, "NOT_FOUND")
        return ids


def test_a_404_by_id_asks_by_platform_id_and_then_the_platform_id_first() -> None:
    param, server = MarketIdParam(), Server({"0xa", "0xb", "K"})
    assert param.ask(["1"], ["0xa"], server) == ["0xa"]
    assert param.ask(["2"], ["0xb"], server) == ["0xb"]
    assert param.ask(["K"], ["K"], server) == ["K"]  # one id: asked once
    assert server.asked == [["1"], ["0xa"], ["0xb"], ["K"]]


def test_the_service_id_is_first_again_when_it_works_and_other_errors_or_a_404_both_ways_are_raised() -> None:
    param, server = MarketIdParam(), Server({"0xa", "2"})
    param.ask(["1"], ["0xa"], server)
    assert param.ask(["2"], ["0xb"], server) == ["2"] and server.asked[-2:] == [["0xb"], ["2"]]
    assert param.ask(["3"], [None], Server({"3"})) == ["3"]  # no platform id known: the id alone
    with pytest.raises(ApiError, match="404"):
        param.ask(["4"], ["0xd"], server)

    def refused(_ids: list[str]) -> list[str]:
        raise ApiError("GET /trades answered 400 VALIDATION_ERROR", 400, "VALIDATION_ERROR")

    with pytest.raises(ApiError, match="400"):
        param.ask(["1"], ["0xa"], refused)


@pytest.mark.parametrize("market_id_param", ["any", "platform"])
def test_trades_and_price_history_cost_one_extra_request_a_session_and_belong_to_the_markets_asked(
        market_id_param: str) -> None:
    app = SandboxApp(SandboxConfig(world=WORLD, readings=Readings(market_id_param=market_id_param)))
    http = HttpLayer(SANDBOX_BASE_URL, api_key=Secret(app.config.api_keys[0]), transport=SandboxTransport(app),
                     max_attempts=1)
    markets = [m for m in app.world.markets("polymarket") if is_live_on(m, DAY, app.world.as_of)][:12]
    ids, platform_ids = [m.id for m in markets], {m.id: m.platform_id for m in markets}
    # Price history in a session of its own (a run's step), then trades in another.
    prices = list(UnifiedSource(http, None, "test").price_pages("polymarket", DAY, ids[:10], 1795219200,
                                                                1795305600, [platform_ids[m] for m in ids[:10]]))
    trades = list(UnifiedSource(http, None, "test").trade_pages("polymarket", DAY, ids, platform_ids=platform_ids))
    assert [p.asked_for[0] for p in trades if p.records] == sorted({p.asked_for[0] for p in trades if p.records},
                                                                   key=ids.index)
    assert {p.asked_for[0] for p in trades} == set(ids) and prices[0].asked_for == tuple(ids[:10])
    refused = 1 if market_id_param == "platform" else 0
    assert Counter(http.stats.by_endpoint) == {"/trades": len(trades) + refused, "/price-history": 1 + refused}
    assert len(prices[0].records) > 0
