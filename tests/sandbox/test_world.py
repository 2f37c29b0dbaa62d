"""The synthetic world: identifiers, lifecycles, prices and trades that look and behave like the real ones."""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from pipeline.engine.schema import MarketStatus, MarketType, Platform
from pmw_sandbox import SandboxApp, SandboxConfig, orderbooks
from pmw_sandbox.activity import period_ohlc
from pmw_sandbox.catalogue_builder import build_catalogue
from pmw_sandbox.world import World, shared_world
from tests.support.world import WORLD

KALSHI_SERIES = re.compile(r"^KX[A-Z0-9]+$")
KALSHI_EVENT = re.compile(r"^KX[A-Z0-9]+-\d{2}[A-Z]{3}\d{2}[A-Z0-9]*$")
KALSHI_MARKET = re.compile(r"^KX[A-Z0-9]+-\d{2}[A-Z]{3}\d{2}[A-Z0-9]*-[A-Z0-9.]+$")


@pytest.fixture(scope="module")
def world() -> World:
    return World(WORLD)


def test_sandboxes_of_one_world_share_it_and_other_worlds_get_their_own() -> None:
    first, second = SandboxApp(SandboxConfig(world=WORLD)), SandboxApp(SandboxConfig(world=WORLD))
    assert first.world is second.world is shared_world(WORLD)
    other = shared_world(replace(WORLD, seed=WORLD.seed + 1))
    assert other is not first.world and other.config.seed == WORLD.seed + 1
    yesterday = datetime.now(UTC).date() - timedelta(days=1)
    assert shared_world(replace(WORLD, end=None)) is shared_world(replace(WORLD, end=yesterday))


def test_a_shared_world_answers_like_a_world_of_its_own() -> None:
    shared, own = shared_world(WORLD), World(WORLD)
    market = own.markets(Platform.KALSHI)[0]
    assert shared.trade_records(market, 0, 50) == own.trade_records(market, 0, 50)


def test_catalogue_is_deterministic_and_seed_dependent() -> None:
    a = build_catalogue(WORLD, Platform.KALSHI)
    assert a == build_catalogue(WORLD, Platform.KALSHI)
    other = build_catalogue(type(WORLD)(seed=WORLD.seed + 1, end=WORLD.end), Platform.KALSHI)
    assert [m.id for m in other.markets] != [m.id for m in a.markets]


def test_polymarket_identifiers(world: World) -> None:
    markets = world.markets(Platform.POLYMARKET)
    assert markets
    for m in markets:
        assert m.id.isdigit()
        assert re.fullmatch(r"0x[0-9a-f]{64}", m.condition_id or "")
        assert m.platform_id == m.condition_id
        for outcome in m.outcomes:
            assert re.fullmatch(r"[1-9]\d{76}", outcome.id), outcome.id
    assert all(s.id.isdigit() for s in world.series(Platform.POLYMARKET))
    assert all(e.id.isdigit() for e in world.events(Platform.POLYMARKET))


def test_kalshi_tickers(world: World) -> None:
    assert all(KALSHI_SERIES.match(s.id) for s in world.series(Platform.KALSHI))
    assert all(KALSHI_EVENT.match(e.id) for e in world.events(Platform.KALSHI))
    for m in world.markets(Platform.KALSHI):
        assert KALSHI_MARKET.match(m.id), m.id
        assert m.id.startswith(m.event_id + "-") and m.event_id.startswith(m.series_id + "-")
    assert any(re.fullmatch(r"KXBTCD-\d{2}[A-Z]{3}\d{2}-T\d+", m.id) for m in world.markets(Platform.KALSHI))


def test_ids_are_unique(world: World) -> None:
    for p in (Platform.POLYMARKET, Platform.KALSHI):
        for items in (world.catalogues[p].series, world.catalogues[p].events, world.catalogues[p].markets):
            ids = [x.id for x in items]
            assert len(ids) == len(set(ids))


def test_every_status_and_type_appears_and_some_resolve_inside_the_window(world: World) -> None:
    markets = world.markets(Platform.POLYMARKET) + world.markets(Platform.KALSHI)
    assert {m.status for m in markets} == set(MarketStatus)
    assert {m.market_type for m in markets} == set(MarketType)
    resolved_inside = [m for m in markets if m.resolved_at and WORLD.window_start <= m.resolved_at < WORLD.as_of]
    assert resolved_inside
    for m in markets:
        if m.status == MarketStatus.RESOLVED:
            assert m.resolved_at is not None and m.resolved_at <= WORLD.as_of + timedelta(hours=2)
        if m.status in (MarketStatus.PAUSED, MarketStatus.CANCELLED):
            assert m.stopped_at is not None and m.resolved_at is None


def test_multivariate_markets_exist_only_on_kalshi_and_are_hidden(world: World) -> None:
    mve = [m for m in world.all_markets(Platform.KALSHI) if m.multivariate]
    assert len(mve) == WORLD.multivariate_markets
    assert all(m.id.startswith("KXMVE") for m in mve)
    assert not any(m.multivariate for m in world.markets(Platform.KALSHI))
    assert world.find_market(mve[0].id) is None
    assert not any(m.multivariate for m in world.all_markets(Platform.POLYMARKET))


def test_prices_are_bounded_and_outcomes_sum_to_about_one(world: World) -> None:
    for m in world.markets(Platform.POLYMARKET)[:12] + world.markets(Platform.KALSHI)[:12]:
        prices = world.activity(m).prices
        assert prices.min() >= 0.01 and prices.max() <= 0.99
        assert np.abs(prices.sum(axis=0) - 1).max() < 0.02 * len(m.outcomes)
        assert prices[0].std() > 0  # it moves


def test_trade_arrival_varies_by_market(world: World) -> None:
    rates = []
    for m in world.markets(Platform.KALSHI):
        act = world.activity(m)
        hours = (act.minutes / 60) or 1
        rates.append(len(act.ts) / hours)
    assert max(rates) > 5 * min(r for r in rates if r > 0)


def test_trades_sit_inside_the_hourly_candles_of_their_outcome(world: World) -> None:
    market = max(world.markets(Platform.KALSHI), key=lambda m: len(world.activity(m).ts))
    act = world.activity(market)
    start, end = int(act.ts[0]), int(act.ts[-1])
    for j in range(len(market.outcomes)):
        starts, ohlc = period_ohlc(act, j, start - 3600, end, 60)
        mask = act.outcome == j
        hour = np.searchsorted(starts, act.ts[mask], side="right") - 1
        assert (act.price[mask] >= ohlc[hour, 2] - 1e-9).all()
        assert (act.price[mask] <= ohlc[hour, 1] + 1e-9).all()
        # a minute candle is the path itself, which is what trades are priced at
        minute_starts, minute_ohlc = period_ohlc(act, j, start - 60, end, 1)
        minute = np.searchsorted(minute_starts, act.ts[mask], side="right") - 1
        assert np.allclose(act.price[mask], minute_ohlc[minute, 3])


def test_trades_stay_inside_the_markets_live_interval(world: World) -> None:
    for m in world.markets(Platform.POLYMARKET):
        act = world.activity(m)
        if len(act.ts):
            assert act.ts[0] >= int(max(m.trading_start, WORLD.window_start).timestamp())
            assert act.ts[-1] < int(m.live_until(WORLD.as_of).timestamp())


def test_orderbook_brackets_the_current_price(world: World) -> None:
    open_markets = [m for m in world.markets(Platform.KALSHI) if m.status == MarketStatus.OPEN]
    for m in open_markets:
        book = orderbooks.book(world, m.platform, m.id, world.as_of)
        assert book is not None
        price = world.current_prices(m)[m.outcomes[0].id]["price"]
        bids, asks = book["yes"]["bids"], book["yes"]["asks"]
        assert bids or asks
        assert all(b["price"] < price for b in bids) and all(a["price"] > price for a in asks)
        assert all(0 < level["price"] < 1 for level in bids + asks)
        # A YES bid at p is a NO ask at 1 - p.
        assert sorted(round(1 - b["price"], 4) for b in book["yes"]["bids"]) == sorted(
            a["price"] for a in book["no"]["asks"]
        )


def test_world_can_be_sized_for_benchmarks() -> None:
    big = World(
        type(WORLD)(
            seed=3,
            end=WORLD.end,
            days=1,
            series_per_platform=1,
            events_per_series=1,
            markets_per_event=1,
            trades_per_market_day=2_000_000,
            multivariate_markets=0,
        )
    )
    total = sum(len(big.activity(m).ts) for m in big.markets(Platform.KALSHI))
    assert total > 100_000
