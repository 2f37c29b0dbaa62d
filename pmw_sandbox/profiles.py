"""The sandbox's traders: a profile and trading metrics for each trader of the world, and their trades.

A trader is one of the users that the world's trades carry (`world.users`): a wallet address on Polymarket, a
nickname on Kalshi. Their trades are the world's own trades (the same ids as `/trades` serves), every row they
are the user of, newest first; their metrics are computed from those trades up to the moment asked: volume (the
notional of their trades), markets traded, PnL (each contract valued at its outcome's price of that moment
against what was paid), ROI (PnL over volume), portfolio value and open interest (the value and the count of
the contracts they still hold).

`Ledger` holds every trade of a platform up to a moment, all traders at once, built in one pass over the
markets' activity: a profile or a page of trades is then a filter of it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import numpy as np
import polars as pl

from pipeline.engine.schema import Platform
from pmw_sandbox.catalogue import Market
from pmw_sandbox.world import World, iso, users

Record = dict[str, Any]


@dataclass(frozen=True)
class Ledger:
    """A platform's trades up to `until` (Unix seconds): one row per trade row of the world, every trader's."""

    markets: list[Market]
    rows: pl.DataFrame  # market (index into markets), position, ts, user, price, size, signed, outcome, now

    @classmethod
    def of(cls, world: World, platform: Platform, until: int) -> Ledger:
        markets = world.markets(platform)
        parts = []
        for k, market in enumerate(markets):
            act = world.activity(market)
            kept = np.flatnonzero(act.ts <= until)
            now = act.price_at(until)
            parts.append(pl.DataFrame({
                "market": np.full(len(kept), k, dtype=np.int64), "position": kept.astype(np.int64),
                "ts": act.ts[kept].astype(np.int64), "user": act.user[kept].astype(np.int64),
                "price": act.price[kept], "size": act.size[kept],
                "signed": np.where(act.side[kept] == 0, 1.0, -1.0) * act.size[kept],
                "outcome": act.outcome[kept].astype(np.int64), "now": now[act.outcome[kept]],
            }))
        return cls(markets, pl.concat(parts))

    def newest_first(self, index: int) -> list[tuple[Market, int]]:
        """(market, position in its activity) of the trader's rows, newest first (ties by market, then row)."""
        mine = self.rows.filter(pl.col("user") == index).sort(["ts", "market", "position"],
                                                              descending=[True, False, True])
        return [(self.markets[k], p) for k, p in mine.select("market", "position").iter_rows()]

    def metrics(self, index: int, at: datetime) -> Record:
        mine = self.rows.filter(pl.col("user") == index)
        held = mine.group_by("market", "outcome").agg(pl.col("signed").sum(), pl.col("now").first())
        volume = float((mine["price"] * mine["size"]).sum())
        pnl = float((mine["signed"] * (mine["now"] - mine["price"])).sum())
        return {
            "volume": round(volume, 2),
            "pnl": round(pnl, 2),
            "num_markets_traded": mine["market"].n_unique(),
            "roi": round(pnl / volume, 6) if volume else 0.0,
            "portfolio_value": round(float((held["signed"].clip(lower_bound=0) * held["now"]).sum()), 2),
            "open_interest": round(float(held["signed"].abs().sum()), 2),
            "metadata": {"as_of": iso(at)},
        }


def trader_index(platform: Platform, user: str) -> int | None:
    """The position of the trader named `user` among the platform's users, or None."""
    names = [u["name"] for u in users(platform)]
    return names.index(user) if user in names else None


def profile(world: World, platform: Platform, index: int, at: datetime, ledger: Ledger | None) -> Record:
    """The trader's profile, and their metrics at `at` from the ledger when given (else null), as the API's data."""
    shown = users(platform)[index]
    return {
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
        "metrics": ledger.metrics(index, at) if ledger is not None else None,
    }
