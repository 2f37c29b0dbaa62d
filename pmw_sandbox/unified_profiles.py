"""`/profile/info` and `/profile/trades`: a trader's profile and trades up to the moment served (`live_at`)."""

from __future__ import annotations

from datetime import datetime

import numpy as np

from pipeline.engine.schema import MARKET_PLATFORMS, Platform
from pmw_sandbox import profiles
from pmw_sandbox.router import Handler
from pmw_sandbox.unified_context import Context
from pmw_sandbox.unified_http import Query, bad, not_found
from pmw_sandbox.unified_paging import Pager
from pmw_sandbox.world import Record, iso

LEDGERS_KEPT = 4  # the moments whose ledgers are kept: a test or the demo asks about a few at a time


class ProfileRoutes:
    def __init__(self, context: Context, pager: Pager) -> None:
        self.context, self.world, self.pager = context, context.world, pager
        self._ledgers: dict[tuple[Platform, datetime], profiles.Ledger] = {}

    def routes(self) -> dict[str, Handler]:
        return {"/profile/info": self.profile_info, "/profile/trades": self.profile_trades}

    def profile_info(self, query: Query) -> Record:
        """A trader's profile, with their metrics as of the moment served when include_metrics=true."""
        with_metrics = query.flag("include_metrics")
        platform, index = self._trader(query)
        at, ledger = self._ledger(platform) if with_metrics else (self.context.now(), None)
        data = profiles.profile(self.world, platform, index, at, ledger)
        meta = {"request_time": 0, "platform": platform.value, "data_freshness": iso(self.world.as_of)}
        return {"data": data, "meta": meta}

    def profile_trades(self, query: Query) -> Record:
        """A trader's trades, newest first (oldest first under that reading of /trades)."""
        query.limit("profile_trades")
        platform, index = self._trader(query)
        rows = self._ledger(platform)[1].newest_first(index)
        readings = self.context.readings
        if readings.trades_order != "newest_first":
            rows = rows[::-1]
        items, pagination = self.pager.page(
            "/profile/trades", "profile_trades", query, len(rows),
            lambda o, n: [record for market, i in rows[o : o + n]
                          for record in self.world.trade_records_at(market, np.array([i]))],
        )
        meta = {"request_time": 0, "platform": platform.value, "data_freshness": iso(self.world.as_of)}
        return {readings.profile_trades_envelope: items, "pagination": pagination, "meta": meta}

    def _trader(self, query: Query) -> tuple[Platform, int]:
        """The platform and trader a profile request names; 400 for a bad parameter, 404 for no such trader."""
        platform = query.platform(MARKET_PLATFORMS, required=True)
        assert platform is not None
        user = query.text("user")
        if user is None or len(user) > 100:
            raise bad("user", "is required: a wallet address (polymarket) or a nickname (kalshi), 1 to 100 characters")
        index = profiles.trader_index(platform, user)
        if index is None:
            raise not_found(f"user {user!r} not found on {platform.value}")
        return platform, index

    def _ledger(self, platform: Platform) -> tuple[datetime, profiles.Ledger]:
        """The platform's trades up to the moment served, kept for the last few moments asked about."""
        at = self.context.now()
        key = (platform, at)
        if key not in self._ledgers:
            if len(self._ledgers) >= LEDGERS_KEPT:
                self._ledgers.pop(next(iter(self._ledgers)))
            self._ledgers[key] = profiles.Ledger.of(self.world, platform, int(at.timestamp()))
        return at, self._ledgers[key]
