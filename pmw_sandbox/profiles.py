"""The sandbox's traders: a profile and trading metrics for each trader of the world, and their trades.

A trader is one of the users that the world's trades carry (`world.users`): a wallet address on Polymarket, a
nickname on Kalshi. Their trades are the world's own trades (the same ids as `/trades` serves), every row they
are the user of, newest first; their metrics are computed from those trades up to the moment asked: volume (the
notional of their trades), markets traded, PnL (each position valued at the outcome's price of that moment
against what was paid), ROI (PnL over volume), portfolio value and open interest (the value and the count of
the contracts they still hold).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import cached_property
from typing import Any

import numpy as np

from pipeline.engine.schema import Platform
from pmw_sandbox.catalogue import Market
from pmw_sandbox.world import World, iso, users

Record = dict[str, Any]


@dataclass(frozen=True)
class TraderTrades:
    """One trader's rows in the world's markets: per market, the positions of their rows in its activity."""

    world: World
    platform: Platform
    index: int

    @cached_property
    def by_market(self) -> list[tuple[Market, np.ndarray]]:
        found = []
        for market in self.world.markets(self.platform):
            rows = np.flatnonzero(self.world.activity(market).user == self.index)
            if len(rows):
                found.append((market, rows))
        return found

    def newest_first(self, at: datetime) -> list[tuple[Market, int]]:
        """(market, position) of every row up to `at`, newest first (ties by market id, then position)."""
        until = int(at.timestamp())
        rows = [(int(self.world.activity(m).ts[i]), m.id, int(i), m) for m, positions in self.by_market
                for i in positions if self.world.activity(m).ts[i] <= until]
        rows.sort(key=lambda row: (-row[0], row[1], -row[2]))
        return [(market, i) for _, _, i, market in rows]


def trader_index(platform: Platform, user: str) -> int | None:
    """The position of the trader named `user` among the platform's users, or None."""
    names = [u["name"] for u in users(platform)]
    return names.index(user) if user in names else None


def profile(world: World, platform: Platform, index: int, at: datetime, with_metrics: bool) -> Record:
    """The trader's profile, and their metrics at `at` when asked (else null), as the unified API's data."""
    shown = users(platform)[index]
    record: Record = {
        "profile": {
            "platform": platform.value,
            "user_id": f"{platform.value}-{index}",
            "display_name": shown["pseudonym"],
            "profile_image": shown["profile_image"],
            "description": f"{shown['pseudonym']} trades on the sandbox's {platform.value}",
            "joined_at": iso(world.config.window_start - timedelta(days=30 + index % 400)),
            "follower_count": index * 7 % 1000,
            "following_count": index * 3 % 200,
            "profile_view_count": index * 13 % 5000,
            "metadata": {},
        },
        "metrics": _metrics(world, TraderTrades(world, platform, index), at) if with_metrics else None,
    }
    return record


def _metrics(world: World, trades: TraderTrades, at: datetime) -> Record:
    until = int(at.timestamp())
    volume = pnl = portfolio = open_interest = 0.0
    markets = 0
    for market, positions in trades.by_market:
        act = world.activity(market)
        mine = positions[act.ts[positions] <= until]
        if not len(mine):
            continue
        markets += 1
        signed = np.where(act.side[mine] == 0, 1.0, -1.0) * act.size[mine]
        now = act.price_at(until)[act.outcome[mine]]
        volume += float((act.price[mine] * act.size[mine]).sum())
        pnl += float((signed * (now - act.price[mine])).sum())
        held = np.bincount(act.outcome[mine], weights=signed, minlength=len(market.outcomes))
        portfolio += float((np.clip(held, 0, None) * act.price_at(until)).sum())
        open_interest += float(np.abs(held).sum())
    return {
        "volume": round(volume, 2),
        "pnl": round(pnl, 2),
        "num_markets_traded": markets,
        "roi": round(pnl / volume, 6) if volume else 0.0,
        "portfolio_value": round(portfolio, 2),
        "open_interest": round(open_interest, 2),
        "metadata": {"as_of": iso(at)},
    }
