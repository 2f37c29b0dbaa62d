"""`/trades`: a market's trades, newest first or in the reading's order, with the readings' ids, takers and
outcomes (and the `malformed_record` fault's one broken trade)."""

from __future__ import annotations

from typing import Any

import numpy as np

from pipeline.engine.schema import Platform
from pmw_sandbox.router import Handler
from pmw_sandbox.unified_context import Context, as_read
from pmw_sandbox.unified_http import Query, bad, not_found
from pmw_sandbox.unified_paging import Pager
from pmw_sandbox.world import Record, iso

# Under the `trades_order=recorded` reading, the last trade before each midnight is recorded this late.
RECORDED_LATE_S = 1_800


class TradeRoutes:
    def __init__(self, context: Context, pager: Pager) -> None:
        self.context, self.world, self.pager = context, context.world, pager
        self._malformed_record_sent = False

    def routes(self) -> dict[str, Handler]:
        return {"/trades": self.trades}

    def trades(self, query: Query) -> Record:
        market_id = query.text("market_id")
        if market_id is None:
            raise bad("market_id", "is required (a Polymarket numeric market id or a Kalshi ticker)")
        taker_only = query.flag("taker_only")
        query.limit("trades")  # parameters are validated before ids are looked up
        market = self.context.asked_market(market_id)
        if market is None:
            raise not_found(f"market {market_id!r} not found")
        taker_only = taker_only and market.platform == Platform.POLYMARKET
        total = self.world.trade_count(market, taker_only)
        readings = self.context.readings
        recorded = self._recorded(market, taker_only) if readings.trades_order == "recorded" else None
        oldest_first = readings.trades_order == "oldest_first"
        items, pagination = self.pager.page(
            "/trades", "trades", query, total,
            lambda o, n: (self.world.trade_records(market, o, n, taker_only, oldest_first) if recorded is None
                          else self.world.trade_records_at(market, recorded[o : o + n])),
        )
        as_read(items, "market_id", market, readings.row_market_id)
        if readings.trade_taker == "absent":
            for item in items:
                item["taker"] = None
        if readings.trade_outcome == "id":
            names = {o.name: o.id for o in market.outcomes}
            for item in items:
                item["outcome"] = names[item["outcome"]]
        meta = {
            "request_time": 0,
            "market_id": market.id,
            "platform": market.platform.value,
            "data_freshness": iso(self.world.as_of),
        }
        if self.context.faults.malformed_record and items and not self._malformed_record_sent:
            self._malformed_record_sent = True
            broken = {**items[-1], "trade_id": f"{items[-1]['trade_id']}-malformed", "price": "not-a-price"}
            items.append(broken)
        return {"trades": items, "pagination": pagination, "meta": meta}

    def _recorded(self, market: Any, taker_only: bool) -> np.ndarray:
        """The positions of a market's trades oldest first in the order the server recorded them: the last trade
        before each midnight recorded RECORDED_LATE_S late, so that it comes after trades of the next day."""
        act = self.world.activity(market)
        positions = act.taker_newest_first[::-1] if taker_only else np.arange(len(act.ts))
        day = act.ts[positions] // 86_400
        last_of_day = np.append(day[1:] != day[:-1], False)
        recorded = act.ts[positions] + np.where(last_of_day, RECORDED_LATE_S, 0)
        return positions[np.argsort(recorded, kind="stable")]
