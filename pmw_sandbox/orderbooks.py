"""The sandbox's orderbooks: every market's book at any moment of its world, on all four orderbook platforms.

A Polymarket or Kalshi book brackets the market's simulated YES price at that moment (bids below it, asks above
it, a level a tick apart); its depth and the number of levels vary from minute to minute, and now and then a
side is empty. Limitless and Manifold have orderbooks only: their markets exist here alone, under fixed ids
(so that an example watch list names them whatever the seed), each with a price that drifts through the day.
The NO book mirrors the YES book (a YES bid at p is a NO ask at 1 - p). A market no longer tradable at the
moment has an empty book.

Two switches change what is served: the `crossed_book` fault lifts every YES bid above the best ask (a crossed
book, which the pipeline must land and report), and the `book_order` reading lists each side best price last
(as Kalshi's own API does) instead of first; the spec says neither.
"""

from __future__ import annotations

import hashlib
import math
from datetime import datetime
from typing import Any

import numpy as np

from pipeline.engine.schema import MarketStatus, MarketType, Platform
from pmw_sandbox.catalogue import Market
from pmw_sandbox.world import World, iso

Record = dict[str, Any]
LEVELS = 5
# The markets that exist only as orderbooks (platforms with no catalogue in the unified API).
BOOK_ONLY_MARKETS: dict[Platform, tuple[str, ...]] = {
    Platform.LIMITLESS: ("btc-above-120k-on-dec-31", "eth-flips-4k-this-week", "fed-cuts-in-december"),
    Platform.MANIFOLD: ("Mz3kQ8vXe1", "Lp7TnW2rAa", "Qd9HsY4uBc"),
}
_BOOK_ONLY_TICK = 0.01
_LEVEL_COUNTS = np.arange(LEVELS + 1)
_LEVEL_COUNT_WEIGHTS = np.array([0.06, 0.1, 0.16, 0.2, 0.24, 0.24])


def book(world: World, platform: Platform, market_id: str, at: datetime, *, crossed: bool = False,
         best_last: bool = False) -> Record | None:
    """The book of a market at `at` in the unified API's Orderbook shape, or None when there is no such market."""
    if platform in BOOK_ONLY_MARKETS:
        if market_id not in BOOK_ONLY_MARKETS[platform]:
            return None
        price, tick, tradable, seed = _book_only_price(world, market_id, at), _BOOK_ONLY_TICK, True, market_id
        rules = {"min_order_size": 1.0, "tick_size": tick, "neg_risk": False}
    else:
        market = world.find_market(market_id, platform)
        if market is None:
            return None
        price, tick, seed = _market_price(world, market, at), market.tick, market.index
        tradable = _tradable(world, market, at)
        rules = {"min_order_size": 5.0 if platform == Platform.POLYMARKET else 1.0, "tick_size": market.tick,
                 "neg_risk": market.market_type == MarketType.CATEGORICAL}
    rng = np.random.default_rng([world.config.seed, _number(platform.value), _number(str(seed)),
                                 int(at.timestamp()) // 60, 55])
    bids, asks = _sides(rng, price, tick) if tradable else ([], [])
    if crossed and asks:
        lift = asks[0]["price"] - (bids[0]["price"] if bids else asks[0]["price"]) + tick
        bids = [{"price": round(b["price"] + lift, 4), "size": b["size"]} for b in bids] or [
            {"price": round(asks[0]["price"] + tick, 4), "size": asks[0]["size"]}]
    no_bids = [{"price": round(1 - a["price"], 4), "size": a["size"]} for a in asks]
    no_asks = [{"price": round(1 - b["price"], 4), "size": b["size"]} for b in bids]
    sides = [bids, asks, no_bids, no_asks]
    if best_last:
        sides = [side[::-1] for side in sides]
    return {
        "market_id": market_id,
        "platform": platform.value,
        "timestamp": iso(at),
        "yes": {"bids": sides[0], "asks": sides[1], "depth": _depth(bids + asks)},
        "no": {"bids": sides[2], "asks": sides[3], "depth": _depth(no_bids + no_asks)},
        "metadata": rules,
    }


def _sides(rng: np.random.Generator, price: float, tick: float) -> tuple[list[Record], list[Record]]:
    """Bid and ask levels around `price`, best first: each side 0 to 5 levels a tick apart, the first one or two
    ticks away from the price; never both sides empty."""
    counts = rng.choice(_LEVEL_COUNTS, size=2, p=_LEVEL_COUNT_WEIGHTS)
    counts[1] = max(counts[1], 1 - min(counts[0], 1))
    gaps = rng.integers(1, 3, size=2)
    sizes = np.round(rng.lognormal(5, 1, size=2 * LEVELS), 2)
    bids = [{"price": round(price - int(gaps[0] + k) * tick, 4), "size": float(sizes[k])}
            for k in range(int(counts[0]))]
    asks = [{"price": round(price + int(gaps[1] + k) * tick, 4), "size": float(sizes[LEVELS + k])}
            for k in range(int(counts[1]))]
    return [b for b in bids if b["price"] > 0], [a for a in asks if a["price"] < 1]


def _depth(levels: list[Record]) -> float:
    return round(sum(level["size"] for level in levels), 2)


def _market_price(world: World, market: Market, at: datetime) -> float:
    return float(world.activity(market).price_at(int(at.timestamp()))[0])


def _tradable(world: World, market: Market, at: datetime) -> bool:
    """Open or paused as the world ends, and not yet stopped at the moment."""
    return market.status in (MarketStatus.OPEN, MarketStatus.PAUSED) and at <= market.live_until(world.as_of)


def _book_only_price(world: World, market_id: str, at: datetime) -> float:
    """A price between 0.1 and 0.9 drifting with the hour, on the 0.01 grid."""
    phase = _number(f"{world.config.seed}:{market_id}") % 1000 / 1000 * 2 * math.pi
    hours = at.timestamp() / 3600
    return round(0.5 + 0.35 * math.sin(phase + hours / 9), 2)


def _number(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=4).digest(), "big")
