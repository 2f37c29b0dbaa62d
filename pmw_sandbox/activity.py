"""What happens in a sandbox market: a minute-by-minute price path and the trades made on it.

Prices are bounded random walks in logit space, rounded to the market's tick, so every outcome's price
stays inside (0, 1) and the outcomes of a market sum to about 1. Trades arrive as a Poisson process whose
rate differs per market and are priced at the path's value in their minute, so price history built from the
path is consistent with the trades by construction. A Polymarket match is several rows, as the Data API reports
it: the taker's order, then the resting orders it filled (makers: same moment, token and price, the other side,
their sizes adding up to the taker's); a Kalshi trade is one row, its taker's. Everything is vectorised with
numpy: a market with millions of trades simulates in well under a second, and the result depends only on the seed
and the market, never on the order in which markets are asked for.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from functools import cached_property

import numpy as np

from pipeline.engine.schema import Platform
from pmw_sandbox.catalogue import Market

PRICE_FLOOR = 0.01
SIDES = ("buy", "sell")
USERS_PER_PLATFORM = 500


@dataclass(frozen=True)
class MarketActivity:
    start_minute: int  # Unix minute of the first simulated minute
    prices: np.ndarray  # (outcomes, minutes) float64, tick-rounded
    ts: np.ndarray  # trade timestamps, Unix seconds, ascending
    outcome: np.ndarray  # outcome index per trade
    side: np.ndarray  # 0 = buy, 1 = sell
    price: np.ndarray
    size: np.ndarray
    taker: np.ndarray
    user: np.ndarray
    match: np.ndarray  # per row, the row of its match's taker (the row itself on Kalshi)

    @cached_property
    def taker_newest_first(self) -> np.ndarray:
        """Indices of taker trades, newest first (the order the trades endpoint pages in)."""
        return np.flatnonzero(self.taker)[::-1]

    @property
    def minutes(self) -> int:
        return int(self.prices.shape[1])

    def last_prices(self) -> np.ndarray:
        return self.prices[:, -1]

    def price_at(self, unix_s: int) -> np.ndarray:
        """Prices of every outcome at a moment, clamped to the simulated span."""
        minute = int(np.clip(unix_s // 60 - self.start_minute, 0, self.minutes - 1))
        return self.prices[:, minute]


def _round_to_tick(p: np.ndarray, tick: float) -> np.ndarray:
    return np.round(np.round(p / tick) * tick, 4)


def simulate(market: Market, seed: int, history_start: datetime, as_of: datetime) -> MarketActivity:
    """Simulate a market from max(trading start, history start) until it stopped trading."""
    platform_code = 1 if market.platform == Platform.POLYMARKET else 2
    rng = np.random.default_rng([seed, platform_code, market.index, 17])
    start_s = int(max(market.trading_start, history_start).timestamp())
    end_s = max(int(market.live_until(as_of).timestamp()), start_s + 60)
    start_minute, end_minute = start_s // 60, -(-end_s // 60)
    n_minutes = end_minute - start_minute

    prices = _price_paths(rng, np.asarray(market.initial_prices), market.volatility, n_minutes, market.tick)

    hours = (end_s - start_s) / 3600.0
    n_trades = int(rng.poisson(market.trade_rate_per_hour * hours))
    ts = np.sort(rng.integers(start_s, end_s, size=n_trades, dtype=np.int64))
    n_outcomes = len(market.outcomes)
    weights = np.asarray(market.initial_prices) * 0.5 + 0.5 / n_outcomes
    outcome = rng.choice(n_outcomes, size=n_trades, p=weights / weights.sum()).astype(np.int8)
    side = (rng.random(n_trades) < 0.4).astype(np.int8)
    if market.platform == Platform.KALSHI:
        size = np.maximum(1.0, np.round(rng.lognormal(2.0, 1.2, n_trades)))
        taker = np.ones(n_trades, dtype=bool)
    else:
        size = np.maximum(0.01, np.round(rng.lognormal(3.0, 1.3, n_trades), 2))
        taker = _match_starts(rng.random(n_trades))
    match = np.flatnonzero(taker)[np.cumsum(taker) - 1]
    maker = ~taker
    ts, outcome = ts[match], outcome[match]
    side[maker] = 1 - side[match][maker]
    filled = _makers_size(match, size, maker)
    size = np.where(taker & (filled > 0), filled, size)
    minute_index = np.clip(ts // 60 - start_minute, 0, n_minutes - 1)
    price = prices[outcome, minute_index]
    user = rng.integers(0, USERS_PER_PLATFORM, size=n_trades, dtype=np.int32)
    return MarketActivity(start_minute, prices, ts, outcome, side, price, size, taker, user, match)


def _match_starts(draws: np.ndarray) -> np.ndarray:
    """Which rows are takers, each starting a match that the following rows (its makers) fill: a row starts
    one when its draw is low and the previous row's is not, so that no match is without a maker (the first
    row always starts one, the second and the last never do)."""
    starts = np.zeros(len(draws), dtype=bool)
    starts[1:] = (draws[1:] < 0.5) & (draws[:-1] >= 0.5)
    starts[-1:] = False
    starts[:2] = [True, False][: len(draws)]
    return starts


def _makers_size(match: np.ndarray, size: np.ndarray, maker: np.ndarray) -> np.ndarray:
    """Per row, the summed size of the makers of its match (0 where a match has none)."""
    filled = np.bincount(match[maker], weights=size[maker], minlength=len(size))
    return np.round(filled[match], 2)


def _price_paths(
    rng: np.random.Generator, initial: np.ndarray, volatility: float, n_minutes: int, tick: float
) -> np.ndarray:
    n_outcomes = len(initial)
    if n_outcomes == 2:
        x0 = np.log(initial[0] / (1.0 - initial[0]))
        walk = x0 + np.cumsum(rng.normal(0.0, volatility, n_minutes))
        walk = _reflect(walk, bound=np.log((1 - PRICE_FLOOR) / PRICE_FLOOR))
        first = _round_to_tick(1.0 / (1.0 + np.exp(-walk)), tick)
        first = np.clip(first, PRICE_FLOOR, 1 - PRICE_FLOOR)
        return np.vstack([first, np.round(1.0 - first, 4)])
    x0 = np.log(initial)
    walks = x0[:, None] + np.cumsum(rng.normal(0.0, volatility, (n_outcomes, n_minutes)), axis=1)
    walks -= walks.max(axis=0, keepdims=True)
    shares = np.exp(walks)
    shares /= shares.sum(axis=0, keepdims=True)
    return np.clip(_round_to_tick(shares, tick), PRICE_FLOOR, 1 - PRICE_FLOOR)


def _reflect(walk: np.ndarray, bound: float) -> np.ndarray:
    """Fold a walk back into [-bound, bound] so prices bounce off the floor and ceiling."""
    period = 4 * bound
    folded = np.mod(walk + bound, period)
    return np.where(folded <= 2 * bound, folded - bound, 3 * bound - folded)


def period_ohlc(
    activity: MarketActivity, outcome: int, start_s: int, end_s: int, interval_min: int
) -> tuple[np.ndarray, np.ndarray]:
    """OHLC of one outcome's path per period of `interval_min` minutes, aligned to Unix epoch multiples.

    Returns the period start times (Unix seconds) whose start lies in [start_s, end_s] and overlaps the
    simulated span, and an array (periods, 4) of open, high, low, close.
    """
    first_period = -(-start_s // (interval_min * 60))
    last_period = end_s // (interval_min * 60)
    span_first = activity.start_minute // interval_min
    span_last = (activity.start_minute + activity.minutes - 1) // interval_min
    first_period, last_period = max(first_period, span_first), min(last_period, span_last)
    if last_period < first_period:
        return np.empty(0, dtype=np.int64), np.empty((0, 4))
    periods = np.arange(first_period, last_period + 1, dtype=np.int64)
    lo_minute = np.maximum(periods * interval_min - activity.start_minute, 0)
    hi_minute = np.minimum((periods + 1) * interval_min - activity.start_minute, activity.minutes)
    path = activity.prices[outcome]
    ohlc = np.column_stack(
        [
            path[lo_minute],
            np.maximum.reduceat(path, lo_minute),
            np.minimum.reduceat(path, lo_minute),
            path[hi_minute - 1],
        ]
    )
    # reduceat runs to the next index (or the array's end): cut the last period at hi_minute.
    tail = path[lo_minute[-1] : hi_minute[-1]]
    ohlc[-1, 1], ohlc[-1, 2] = tail.max(), tail.min()
    return periods * interval_min * 60, ohlc


def period_volume(activity: MarketActivity, outcome: int, period_starts: np.ndarray, interval_min: int) -> np.ndarray:
    """Traded size of one outcome in each period."""
    if len(period_starts) == 0:
        return np.empty(0)
    mask = activity.outcome == outcome
    ts, size = activity.ts[mask], activity.size[mask]
    width = interval_min * 60
    edges = np.append(period_starts, period_starts[-1] + width)
    bins = np.searchsorted(ts, edges)
    cumulative = np.concatenate([[0.0], np.cumsum(size)])
    return cumulative[bins[1:]] - cumulative[bins[:-1]]


def size_through(activity: MarketActivity, outcome: int, period_starts: np.ndarray, interval_min: int) -> np.ndarray:
    """Traded size of one outcome from the market's first trade to the end of each period: the same for a
    period whatever span a request asks for."""
    mask = activity.outcome == outcome
    cumulative = np.concatenate([[0.0], np.cumsum(activity.size[mask])])
    return cumulative[np.searchsorted(activity.ts[mask], period_starts + interval_min * 60)]
