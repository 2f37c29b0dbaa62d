"""`/price-history`: the price points of up to MAX_PRICE_HISTORY_MARKETS markets over a span, in the readings'
labelling, range, order and `meta.time_range`."""

from __future__ import annotations

from typing import Any

from pipeline.engine.schema import MAX_PRICE_HISTORY_MARKETS, PRICE_HISTORY_INTERVALS
from pmw_sandbox.router import Handler
from pmw_sandbox.unified_context import Context, as_read
from pmw_sandbox.unified_http import Query, bad, not_found
from pmw_sandbox.world import Record, iso


class PriceRoutes:
    def __init__(self, context: Context) -> None:
        self.context, self.world = context, context.world

    def routes(self) -> dict[str, Handler]:
        return {"/price-history": self.price_history}

    def price_history(self, query: Query) -> Record:
        ids_text = query.text("market_ids")
        if ids_text is None:
            raise bad("market_ids", "is required (comma-separated market ids)")
        ids = [i.strip() for i in ids_text.split(",") if i.strip()]
        if len(ids) > MAX_PRICE_HISTORY_MARKETS:
            raise bad("market_ids", f"at most {MAX_PRICE_HISTORY_MARKETS} ids per request, got {len(ids)}")
        interval = query.integer("interval") or 60
        if interval not in PRICE_HISTORY_INTERVALS:
            raise bad(
                "interval", f"expected one of {', '.join(map(str, PRICE_HISTORY_INTERVALS))} minutes, got {interval}"
            )
        as_of = int(self.world.as_of.timestamp())
        end = query.integer("end_ts")
        end = as_of if end is None else end
        start = query.integer("start_ts")
        start = end - 86_400 if start is None else start
        if start > end:
            raise bad("start_ts", f"start_ts ({start}) is after end_ts ({end})")
        limit = query.limit("price_history")
        markets = []
        for market_id in ids:
            market = self.context.asked_market(market_id)
            if market is None:
                raise not_found(f"market {market_id!r} not found")
            markets.append(market)
        points = self._points(markets, start, end, interval)[:limit]
        meta = {
            "total_points": len(points),
            "platforms": sorted({m.platform.value for m in markets}),
            "time_range": self._time_range(points, start, end),
            "interval": str(interval),
            "request_time": 0,
            "cache_hit": False,
            "data_freshness": iso(self.world.as_of),
        }
        return {"data": points, "meta": meta}

    def _time_range(self, points: list[Record], start: int, end: int) -> Record:
        """`meta.time_range` as the reading gives it: the span asked, or the span of the points held."""
        if self.context.readings.price_time_range == "asked" or not points:
            return {"start": start, "end": end}
        times = [point["timestamp"] for point in points]
        return {"start": min(times), "end": max(times)}

    def _points(self, markets: list[Any], start: int, end: int, interval: int) -> list[Record]:
        """The markets' price points labelled within [start, end] (or, reading price_range=periods, of every period
        overlapping it), in the reading's order and labelling."""
        readings = self.context.readings
        shift = interval * 60 if readings.price_label == "period_end" else 0
        first, last = start - shift, end - shift  # the periods whose label lies within [start, end]
        if readings.price_range == "periods":
            first, last = start - start % (interval * 60), end
        ordered = markets[::-1] if readings.price_points_order == "by_market_reversed" else markets
        points: list[Record] = []
        for market in ordered:
            mine = self.world.price_points(market, first, last, interval)
            for point in mine:
                point["timestamp"] += shift
            as_read(mine, "marketId", market, readings.row_market_id)
            points.extend(mine)
        if readings.price_points_order == "by_time":
            points.sort(key=lambda point: point["timestamp"])
        return points
