"""The unified catalogue: `/series`, `/events`, `/events/{id}`, `/markets`, `/markets/{id}`, in the readings'
order, envelopes, ids and price keys."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cached_property
from typing import Any

from pipeline.engine.schema import MARKET_PLATFORMS, MarketStatus, Platform
from pmw_sandbox import stale
from pmw_sandbox.router import Handler
from pmw_sandbox.unified_context import Context
from pmw_sandbox.unified_http import Query, bad, not_found
from pmw_sandbox.unified_paging import Pager
from pmw_sandbox.world import Record, iso


class CatalogueRoutes:
    def __init__(self, context: Context, pager: Pager) -> None:
        self.context, self.world, self.pager = context, context.world, pager

    def routes(self) -> dict[str, Handler]:
        return {
            "/series": self.series,
            "/events": self.events,
            "/events/{event_id}": self.event,
            "/markets": self.markets,
            "/markets/{market_id}": self.market,
        }

    def series(self, query: Query) -> Record:
        nested, raw = query.flag("include_nested"), query.flag("include_raw")
        archive = self.world.archive
        archived = [archive.series_record(p, nested=nested, raw=raw) for p in self._platforms_of(query)
                    if archive.markets and _matches(query, "Archived markets")]
        return self._members(query, "series", "include_nested", self.world.series, self.world.series_record,
                             lambda o, n: archived[o : o + n], len(archived))

    def events(self, query: Query) -> Record:
        archived = self.world.archive.listed_events(self._platforms_of(query), query.text("query"))
        nested, raw = query.flag("with_nested_markets"), query.flag("include_raw")
        return self._members(query, "events", "with_nested_markets", self.world.events, self.world.event_record,
                             lambda o, n: archived.records(o, n, nested=nested, raw=raw), len(archived))

    def _members(
        self, query: Query, kind: str, nested_flag: str, listed: Callable[[Platform], list[Any]],
        record: Callable[..., Record], archived: Callable[[int, int], list[Record]], archived_count: int,
    ) -> Record:
        """A page of `/series` or `/events`: the platforms' members, then the archive's, with their nested members
        on request."""
        platforms = self._platforms_of(query)
        nested, raw = query.flag(nested_flag), query.flag("include_raw")
        members = self.context.ordered(_search([m for p in platforms for m in listed(p)], query))
        items, pagination = self.pager.page(
            f"/{kind}",
            kind,
            query,
            len(members) + archived_count,
            lambda o, n: [self._served(kind, r) for r in _after(
                [record(m, nested=nested, raw=raw) for m in members[o : o + n]], archived, o - len(members), n)],
        )
        return {"pagination": pagination, kind: items, "meta": self._list_meta(platforms)}

    def event(self, query: Query, event_id: str) -> Record:
        platform = query.platform(MARKET_PLATFORMS)
        nested, raw = query.flag("with_nested_markets"), query.flag("include_raw")
        event = self.world.find_event(event_id, platform)
        if event is not None:
            return self._single("events", self._served("events", self.world.event_record(event, nested=nested,
                                                                                         raw=raw)))
        archive = self.world.archive
        for p in [platform] if platform else MARKET_PLATFORMS:
            if (index := archive.event_index(p, event_id)) is not None:
                return self._single("events", self._served("events", archive.event_record(p, index, nested=nested,
                                                                                          raw=raw)))
        raise not_found(f"event {event_id!r} not found")

    def markets(self, query: Query) -> Record:
        platforms = self._platforms_of(query)
        status = query.text("status")
        if status is not None and status not in MarketStatus.__members__.values():
            raise bad("status", f"expected one of {', '.join(MarketStatus)}, got {status!r}")
        markets = [m for p in platforms for m in self.world.markets(p) if status is None or m.status == status]
        markets = self.context.ordered(_search(markets, query))
        archived = self.world.archive.listed_markets(platforms, status, query.text("query"))
        items, pagination = self.pager.page(
            "/markets",
            "markets",
            query,
            len(markets) + len(archived),
            lambda o, n: [self._served("markets", r) for r in _after(
                [self._listed_market(m) for m in markets[o : o + n]], archived.records, o - len(markets), n)],
        )
        meta = self._list_meta(platforms)
        if items:  # a listing is as fresh as its stalest record
            meta["data_freshness"] = min(item["last_synced_at"] for item in items)
        return {"pagination": pagination, "markets": items, "meta": meta}

    def market(self, query: Query, market_id: str) -> Record:
        platform = query.platform(MARKET_PLATFORMS)
        market, raw = self.world.find_market(market_id, platform), query.flag("include_raw")
        if market is not None:
            return self._single("markets", self._served("markets", self.world.market_record(market, raw=raw)))
        archive = self.world.archive
        for p in [platform] if platform else MARKET_PLATFORMS:
            if (index := archive.market_index(p, market_id)) is not None:
                return self._single("markets", self._served("markets", archive.market_record(p, index, raw=raw)))
        raise not_found(f"market {market_id!r} not found")

    def _listed_market(self, market: Any) -> Record:
        """A market's record as the listing shows it: as of the world's end, or (reading stale_listing) as an
        earlier sync left it (pmw_sandbox.stale)."""
        seen = stale.listed(self.world.config, market) if self.context.readings.stale_listing else None
        if seen is None:
            return self.world.market_record(market)
        record = self.world.market_record(market, at=seen.synced)
        record["trading_end_at"] = record["resolution_date"] = iso(seen.trading_end)
        return record

    def _list_meta(self, platforms: Sequence[Platform]) -> Record:
        return {
            "platforms_queried": [p.value for p in platforms],
            "request_time": 0,
            "cache_hit": False,
            "data_freshness": iso(self.world.as_of),
        }

    def _single(self, key: str, record: Record) -> Record:
        """A single event or market in the reading's envelope."""
        meta = {"request_time": 0, "cache_hit": False, "data_freshness": iso(self.world.as_of)}
        if self.context.readings.single_envelope == "data":
            return {"data": record, "meta": meta}
        pagination = {"total": 1, "limit": 1, "has_more": False, "next_cursor": None}
        return {"pagination": pagination, key: [record], "meta": meta}

    @staticmethod
    def _platforms_of(query: Query) -> list[Platform]:
        platform = query.platform(MARKET_PLATFORMS)
        return [platform] if platform else list(MARKET_PLATFORMS)

    def _served(self, kind: str, record: Record) -> Record:
        """A series, event or market record (and those nested in it) as the readings `member_ids` and
        `price_keys` serve it."""
        readings = self.context.readings
        if readings.member_ids == "platform":
            platform = Platform(record["platform"])
            if kind in ("series", "events"):
                record["platform_id"] = self._member_platform_id(platform, record["id"])
            for key in ("event_id", "series_id") if kind == "markets" else ("series_id",) if kind == "events" else ():
                if record.get(key) is not None:
                    record[key] = self._member_platform_id(platform, record[key])
        if kind == "markets" and readings.price_keys == "name":
            names = {outcome["id"]: outcome["name"] for outcome in record["outcomes"]}
            for key in ("current_prices", "price_24h_changes", "price_7d_changes", "last_trades"):
                if record.get(key) is not None:
                    record[key] = {names[k]: value for k, value in record[key].items()}
        for nested in ("events", "markets"):
            for item in record.get(nested) or ():
                self._served(nested, item)
        return record

    def _member_platform_id(self, platform: Platform, member_id: str) -> str:
        known = self._member_platform_ids.get((platform, member_id))
        return known if known is not None else self.world.archive.member_platform_id(platform, member_id)

    @cached_property
    def _member_platform_ids(self) -> dict[tuple[Platform, str], str]:
        """Each series' and event's platform_id under member_ids=platform: Polymarket `{slug}-{id}`, Kalshi the
        ticker in lower case (as Kalshi's web addresses write it)."""
        members = [m for c in self.world.catalogues.values() for m in (*c.series, *c.events)]
        return {(m.platform, m.id): f"{m.slug}-{m.id}" if m.platform == Platform.POLYMARKET else m.id.lower()
                for m in members}


def _after(first: list[Record], archived: Callable[[int, int], list[Record]], offset: int,
           limit: int) -> list[Record]:
    """A page of a listing: the world's own records of it, then the archive's from `offset` (its position among
    them; negative while the page starts among the world's own) up to `limit` records in all."""
    if len(first) >= limit:
        return first
    return first + archived(max(offset, 0), limit - len(first))


def _matches(query: Query, title: str) -> bool:
    text = query.text("query")
    return text is None or text.lower() in title.lower()


def _search(items: list[Any], query: Query) -> list[Any]:
    text = query.text("query")
    if text is None:
        return items
    needle = text.lower()
    return [item for item in items if needle in item.title.lower()]
