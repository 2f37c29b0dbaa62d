"""`/markets/{id}/orderbook`: a market's book as the world stands at the moment served (`live_at`)."""

from __future__ import annotations

from pipeline.engine.schema import MARKET_PLATFORMS, ORDERBOOK_PLATFORMS
from pmw_sandbox import orderbooks
from pmw_sandbox.router import Handler
from pmw_sandbox.unified_context import Context
from pmw_sandbox.unified_http import Query, not_found
from pmw_sandbox.world import Record


class OrderbookRoutes:
    def __init__(self, context: Context) -> None:
        self.context = context

    def routes(self) -> dict[str, Handler]:
        return {"/markets/{market_id}/orderbook": self.orderbook}

    def orderbook(self, query: Query, market_id: str) -> Record:
        """The market's book; the platform, when not given, is the first whose market has the id."""
        asked = query.platform(ORDERBOOK_PLATFORMS)
        raw = query.flag("include_raw")
        at = self.context.now()
        for platform in [asked] if asked else ORDERBOOK_PLATFORMS:
            market = self.context.asked_market(market_id, platform) if platform in MARKET_PLATFORMS else None
            if platform in MARKET_PLATFORMS and market is None:
                continue
            found = orderbooks.book(self.context.world, platform, market.id if market else market_id, at,
                                    crossed=self.context.faults.crossed_book,
                                    best_last=self.context.readings.book_order == "best_last")
            if found is not None:
                found["market_id"] = market_id
                if raw:
                    found["metadata"]["_raw"] = {"market": market_id}
                return {"data": found, "meta": {"request_time": 0}}
        raise not_found(f"orderbook for market {market_id!r} not found")
