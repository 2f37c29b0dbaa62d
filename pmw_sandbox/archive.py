"""The catalogue's past: `WorldConfig.archived_markets` markets per platform that resolved before the window.

A real catalogue lists hundreds of thousands of markets over its history, and `/markets` has no date filter, so
a client pages through them all to find the few hundred live on a day. The archive is that history: its markets
(in events of ARCHIVED_PER_EVENT, under one series per platform) are derived from their index when a page shows
them, never stored, so a world of 200,000 markets costs the sandbox no more memory than one of hundreds. Each
resolved before the window's first day, so none is live on a day of it and none traded or has prices in it. The
unified API lists them (`/series`, `/events`, `/markets`, after the world's own, in index order under every
reading) and answers `/events/{id}` and `/markets/{id}`; the platforms' own APIs, `/trades` and `/price-history`
do not know them.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import cached_property, lru_cache
from typing import Any

import numpy as np

from pipeline.engine.schema import Platform
from pmw_sandbox.catalogue import WorldConfig

Record = dict[str, Any]
ARCHIVED_PER_EVENT = 40  # markets per archived event (a Kalshi ladder of strikes, a Polymarket negRisk event)
ARCHIVE_SPAN_DAYS = 720  # the archive's markets closed over the two years before the window
_POLYMARKET_MARKET_BASE, _POLYMARKET_EVENT_BASE, _POLYMARKET_SERIES_ID = 5_000_000, 9_000_000, "4999999"
_KALSHI_SERIES_ID = "KXARCHIVE"
_KALSHI_MARKET = re.compile(r"KXARCHIVE-(\d{6})-T(\d+)")
_KALSHI_EVENT = re.compile(r"KXARCHIVE-(\d{6})")


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _hex(*parts: object) -> str:
    return hashlib.blake2b(":".join(map(str, parts)).encode(), digest_size=32).hexdigest()


@dataclass(frozen=True)
class _Times:
    """An archived event's times, as its records write them."""

    day: str
    created: str
    start: str
    end: str
    resolved: str
    last_trade: str


@lru_cache(maxsize=4_096)
def _event_times(end: datetime) -> _Times:
    return _Times(end.date().isoformat(), _iso(end - timedelta(days=8)), _iso(end - timedelta(days=7)), _iso(end),
                  _iso(end + timedelta(hours=1)), _iso(end - timedelta(minutes=1)))


@dataclass(frozen=True)
class Archive:
    """The archived markets, events and series of a world, by index."""

    config: WorldConfig

    @property
    def markets(self) -> int:
        """Archived markets per platform."""
        return self.config.archived_markets

    @property
    def events(self) -> int:
        """Archived events per platform."""
        return -(-self.markets // ARCHIVED_PER_EVENT)

    # -- ids ---------------------------------------------------------------------------------------

    def market_id(self, platform: Platform, index: int) -> str:
        if platform == Platform.KALSHI:
            return f"{self.event_id(platform, index // ARCHIVED_PER_EVENT)}-T{index % ARCHIVED_PER_EVENT}"
        return str(_POLYMARKET_MARKET_BASE + index)

    def event_id(self, platform: Platform, event: int) -> str:
        if platform == Platform.KALSHI:
            return f"{_KALSHI_SERIES_ID}-{event:06d}"
        return str(_POLYMARKET_EVENT_BASE + event)

    @staticmethod
    def series_id(platform: Platform) -> str:
        return _KALSHI_SERIES_ID if platform == Platform.KALSHI else _POLYMARKET_SERIES_ID

    def market_index(self, platform: Platform, market_id: str) -> int | None:
        """The index of the archived market this id names, or None."""
        if platform == Platform.KALSHI:
            match = _KALSHI_MARKET.fullmatch(market_id)
            index = int(match[1]) * ARCHIVED_PER_EVENT + int(match[2]) if match and int(match[2]) < ARCHIVED_PER_EVENT \
                else None
        else:
            index = int(market_id) - _POLYMARKET_MARKET_BASE if market_id.isdigit() else None
        named = index is not None and 0 <= index < self.markets and self.market_id(platform, index) == market_id
        return index if named else None

    def event_index(self, platform: Platform, event_id: str) -> int | None:
        """The index of the archived event this id names, or None."""
        if platform == Platform.KALSHI:
            match = _KALSHI_EVENT.fullmatch(event_id)
            index = int(match[1]) if match else None
        else:
            index = int(event_id) - _POLYMARKET_EVENT_BASE if event_id.isdigit() else None
        named = index is not None and 0 <= index < self.events and self.event_id(platform, index) == event_id
        return index if named else None

    def member_platform_id(self, platform: Platform, member_id: str) -> str:
        """An archived series' or event's platform_id under member_ids=platform, as the world's own members'."""
        if platform == Platform.KALSHI:
            return member_id.lower()
        slug = "archive" if member_id == _POLYMARKET_SERIES_ID else f"archived-event-{member_id}"
        return f"{slug}-{member_id}"

    # -- times and figures -------------------------------------------------------------------------

    def _event_end(self, event: int) -> datetime:
        """When the event's markets stopped trading: spread over the span before the window."""
        minutes = 360 + (event * 7_919) % (ARCHIVE_SPAN_DAYS * 1_440)
        return self.config.window_start - timedelta(minutes=minutes)

    def _event_times(self, event: int) -> _Times:
        return _event_times(self._event_end(event))

    @cached_property
    def _as_of(self) -> str:
        return _iso(self.config.as_of)

    @staticmethod
    def _volume(index: Any) -> Any:
        """A market's total volume, from its index (an array of indices gives an array)."""
        return 50.0 + (index * 104_729) % 250_000 / 4.0

    @cached_property
    def _event_volumes(self) -> np.ndarray:
        volumes = self._volume(np.arange(self.markets))
        return np.round(np.add.reduceat(volumes, np.arange(0, self.markets, ARCHIVED_PER_EVENT)), 2) \
            if self.markets else volumes

    def _markets_of(self, event: int) -> range:
        return range(event * ARCHIVED_PER_EVENT, min((event + 1) * ARCHIVED_PER_EVENT, self.markets))

    # -- records -----------------------------------------------------------------------------------

    def series_record(self, platform: Platform, nested: bool = False, raw: bool = False) -> Record:
        series_id, slug = self.series_id(platform), "archive" if platform == Platform.POLYMARKET else _KALSHI_SERIES_ID
        record: Record = {
            "id": series_id, "platform": platform.value, "platform_id": series_id, "title": "Archived markets",
            "last_synced_at": self._as_of, "slug": slug,
            "description": "Archived markets: a catalogue's history, resolved before the window.",
            "image_url": f"https://images.sandbox.invalid/series/{slug}.png", "category": "Archive",
            "tags": ["archive"], "event_count": self.events, "market_count": self.markets,
            "total_volume": round(float(self._event_volumes.sum()), 2),
        }
        if nested:
            record["events"] = [self.event_record(platform, e) for e in range(self.events)]
        if raw:
            record["_raw"] = {"ticker" if platform == Platform.KALSHI else "slug": slug}
        return record

    def event_record(self, platform: Platform, event: int, nested: bool = False, raw: bool = False) -> Record:
        event_id, times = self.event_id(platform, event), self._event_times(event)
        slug = event_id if platform == Platform.KALSHI else f"archived-event-{event_id}"
        title = f"Archived event {event}"
        record: Record = {
            "id": event_id, "platform": platform.value, "platform_id": event_id, "title": title,
            "last_synced_at": self._as_of, "series_id": self.series_id(platform), "slug": slug,
            "description": f"{title}, resolved before the window.",
            "image_url": f"https://images.sandbox.invalid/events/{slug}.png",
            "resolution_source_url": f"https://resolution.sandbox.invalid/{self.series_id(platform).lower()}",
            "event_start_at": times.start, "event_end_at": times.end,
            "market_count": len(self._markets_of(event)), "total_volume": float(self._event_volumes[event]),
        }
        if nested:
            record["markets"] = [self.market_record(platform, i) for i in self._markets_of(event)]
        if raw:
            record["_raw"] = {"event_ticker" if platform == Platform.KALSHI else "id": event_id}
        return record

    def market_record(self, platform: Platform, index: int, raw: bool = False) -> Record:
        """The archived market's record, as synced at the world's end: resolved, its first outcome the winner."""
        event = index // ARCHIVED_PER_EVENT
        market_id, event_id, series_id = self.market_id(platform, index), self.event_id(platform, event), \
            self.series_id(platform)
        times = self._event_times(event)
        is_polymarket = platform == Platform.POLYMARKET
        condition_id = f"0x{_hex(self.config.seed, 'archive', market_id)}" if is_polymarket else None
        if is_polymarket:
            token = int(_hex(self.config.seed, "archive-token", market_id), 16)
            outcomes = [{"id": str(10**76 + (token + j) % (9 * 10**76)), "name": name}
                        for j, name in enumerate(("Yes", "No"))]
        else:
            outcomes = [{"id": "yes", "name": "Yes"}, {"id": "no", "name": "No"}]
        slug = market_id.lower() if not is_polymarket else f"archived-market-{market_id}"
        title = f"Archived market {index}: resolved {times.day}?"
        record: Record = {
            "id": market_id, "platform": platform.value, "platform_id": condition_id or market_id,
            "event_id": event_id, "event_name": f"Archived event {event}",
            "event_slug": f"archived-event-{event_id}" if is_polymarket else None, "series_id": series_id,
            "slug": slug, "market_slug": slug, "title": title, "description": f"{title} Resolved before the window.",
            "category": "Archive", "subcategory": None, "tags": ["archive"], "status": "resolved",
            "market_type": "binary", "outcomes": outcomes,
            "current_prices": {o["id"]: {"price": 1.0 if j == 0 else 0.0} for j, o in enumerate(outcomes)},
            "volume_24h": 0.0, "volume_7d": 0.0, "volume_total": self._volume(index), "liquidity": 0.0,
            "liquidity_score": 0.0, "open_interest": 0.0, "unique_traders": 1 + index % 97, "fee_rate": 0.0,
            "trading_fee": 0.0, "withdrawal_fee": 0.0,
            "source_url": f"https://polymarket.com/event/archived-event-{event_id}" if is_polymarket
            else f"https://kalshi.com/markets/{series_id.lower()}/{market_id.lower()}",
            "image_url": f"https://images.sandbox.invalid/markets/{slug}.png",
            "created_at": times.created, "trading_start_at": times.start, "trading_end_at": times.end,
            "resolution_date": times.end, "resolved_at": times.resolved,
            "resolution_criteria": f"Resolves per the {series_id} rules.",
            "resolution_source": "https://resolution.sandbox.invalid/",
            "price_24h_changes": {o["id"]: 0.0 for o in outcomes}, "price_7d_changes": {o["id"]: 0.0 for o in outcomes},
            "last_trades": {outcomes[0]["id"]: {"price": 0.99, "timestamp": times.last_trade, "size": 10.0}},
            "metadata": {
                "conditionId": condition_id, "ammType": None, "marketType": "normal", "formatType": "binary",
                "competitive": 0.5, "score": 0.0, "bestBid": 1.0, "bestAsk": 1.0, "spread": 0.0,
                "clobTokenIds": [o["id"] for o in outcomes] if is_polymarket else None,
            },
            "last_synced_at": self._as_of,
        }
        if raw:
            record["_raw"] = {"ticker" if not is_polymarket else "conditionId": record["platform_id"]}
        return record

    # -- listings ----------------------------------------------------------------------------------

    def listed_markets(self, platforms: list[Platform], status: str | None, text: str | None) -> ArchivedList:
        """The archived markets a `/markets` listing shows (all resolved; `text` searched in their titles)."""
        if status not in (None, "resolved"):
            return ArchivedList(self, "markets", ())
        return self._listed("markets", platforms, self.markets, text, lambda p, i: self.market_record(p, i)["title"])

    def listed_events(self, platforms: list[Platform], text: str | None) -> ArchivedList:
        return self._listed("events", platforms, self.events, text, lambda _p, e: f"Archived event {e}")

    def _listed(self, kind: str, platforms: list[Platform], count: int, text: str | None,
                title: Any) -> ArchivedList:
        if text is None:
            return ArchivedList(self, kind, tuple((p, range(count)) for p in platforms))
        needle = text.lower()
        return ArchivedList(self, kind, tuple((p, [i for i in range(count) if needle in title(p, i).lower()])
                                              for p in platforms))


@dataclass(frozen=True)
class ArchivedList:
    """Archived markets or events of a listing, platform after platform: their count, and the records of a slice."""

    archive: Archive
    kind: str  # "markets" or "events"
    parts: tuple[tuple[Platform, range | list[int]], ...]

    def __len__(self) -> int:
        return sum(len(indices) for _, indices in self.parts)

    def records(self, offset: int, limit: int, nested: bool = False, raw: bool = False) -> list[Record]:
        """The records from position `offset`, at most `limit` of them."""
        records: list[Record] = []
        for platform, indices in self.parts:
            chosen = indices[max(offset, 0): max(offset, 0) + limit - len(records)]
            offset -= len(indices)
            for i in chosen:
                records.append(self.archive.market_record(platform, i, raw=raw) if self.kind == "markets"
                               else self.archive.event_record(platform, i, nested=nested, raw=raw))
            if len(records) >= limit:
                break
        return records
