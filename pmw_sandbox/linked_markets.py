"""Questions listed on both platforms: the planted truth the market matcher is measured against.

Each planted pair is one question (a quantity against a threshold at a date, or a move of the Fed) listed by Kalshi
and by Polymarket in words of their own; a Polymarket title may ask the opposite sense ("at or below" where Kalshi
asks "above"), so that its Yes is Kalshi's No (outcome map `swapped`). Beside every pair sit decoys, the same topic
asked differently: another threshold (Kalshi), another date (Polymarket), or for a Fed move the other direction (a
hike where the pair asks a cut). A decoy must never be linked. `planted_links(config)` says which is which.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

import numpy as np

from pipeline.engine.schema import MarketStatus, MarketType, Platform
from pmw_sandbox.catalogue import Event, Market, Outcome, Series, WorldConfig

_FIRST_POLYMARKET_ID = 900_000  # far above the ids the catalogue builder deals out
_YES_NO = (("yes", "Yes"), ("no", "No"))


@dataclass(frozen=True)
class _Family:
    """A kind of question: how each platform words it, its thresholds, and how far apart its dates are."""

    key: str
    category: str
    kalshi_subject: str
    polymarket_subject: str
    thresholds: tuple[float, ...]
    unit: str  # "%" or "$"
    monthly: bool  # a month's figure (CPI, unemployment) rather than a day's (a meeting, a price)
    move: bool = False  # a move (cut or hike) rather than a level against a threshold


_FAMILIES = (
    _Family("EFFR", "Economics", "the effective federal funds rate", "the Fed's effective rate",
            (3.83, 4.08, 4.33, 4.58, 4.83), "%", False),
    _Family("CPIANNUAL", "Economics", "CPI inflation year over year", "annual US CPI inflation",
            (2.6, 2.8, 3.0, 3.2, 3.4), "%", True),
    _Family("JOBLESS", "Economics", "the US unemployment rate", "US unemployment",
            (4.1, 4.3, 4.5, 4.7), "%", True),
    _Family("BTCLEVEL", "Crypto", "Bitcoin", "the Bitcoin price",
            (95_000, 100_000, 105_000, 110_000, 115_000), "$", False),
    _Family("FEDMOVE", "Economics", "the Fed", "the Federal Reserve", (25, 50), "bps", False, move=True),
)


@dataclass(frozen=True)
class PlantedLinks:
    """The truth of a world: its linked pairs (Polymarket id, Kalshi id, outcome map) and its decoys (platform, id)."""

    pairs: tuple[tuple[str, str, str], ...]
    decoys: tuple[tuple[Platform, str], ...]


@dataclass(frozen=True)
class _Question:
    family: _Family
    threshold: float
    day: date
    up: bool  # above / hike (Kalshi's sense)


def _value(family: _Family, v: float) -> str:
    if family.unit == "$":
        return f"${v:,.0f}"
    if family.unit == "bps":
        return f"{v:.0f} bps"
    return f"{v:.2f}%" if round(v * 100) % 10 else f"{v:.1f}%"


def _kalshi_title(q: _Question) -> str:
    f, when = q.family, q.day.strftime("%B %-d, %Y")
    if f.move:
        verb = "hike" if q.up else "cut"
        return f"Will {f.kalshi_subject} {verb} rates by {_value(f, q.threshold)} at the {when} meeting?"
    period = f"in {q.day.strftime('%B %Y')}" if f.monthly else f"on {when}"
    return f"Will {f.kalshi_subject} be above {_value(f, q.threshold)} {period}?"


def _polymarket_title(q: _Question, swapped: bool, variant: int) -> str:
    f = q.family
    when = q.day.strftime("%b %-d, %Y") if variant % 2 else q.day.strftime("%B %-d, %Y")
    if f.move:
        verb = "raise" if q.up else "lower"
        return f"{_upper_first(f.polymarket_subject)} to {verb} interest rates by {_value(f, q.threshold)} on {when}?"
    period = f"for {q.day.strftime('%B %Y')}" if f.monthly else f"on {when}"
    value = _value(f, q.threshold)
    if swapped:
        return (f"Will {f.polymarket_subject} be at or below {value} {period}?" if variant % 2
                else f"{_upper_first(f.polymarket_subject)} {value} or lower {period}?")
    return (f"Will {f.polymarket_subject} exceed {value} {period}?" if variant % 2
            else f"{_upper_first(f.polymarket_subject)} higher than {value} {period}?")


def _upper_first(text: str) -> str:
    return text[:1].upper() + text[1:]


class _Planter:
    """Builds the planted markets of both platforms, and remembers the truth."""

    def __init__(self, config: WorldConfig) -> None:
        self.config = config
        self.rng = np.random.default_rng([config.seed, 38])
        self.markets: dict[Platform, list[Market]] = {Platform.POLYMARKET: [], Platform.KALSHI: []}
        self.events: dict[Platform, list[Event]] = {Platform.POLYMARKET: [], Platform.KALSHI: []}
        self.pairs: list[tuple[str, str, str]] = []
        self.decoys: list[tuple[Platform, str]] = []
        self._number = _FIRST_POLYMARKET_ID

    def plant(self) -> None:
        for i in range(self.config.linked_pairs):
            family = _FAMILIES[i % len(_FAMILIES)]
            slot = i // len(_FAMILIES)
            day = self._day(family, 2 * slot)  # pairs take even slots, date decoys odd ones: never a pair's date
            threshold = float(self.rng.choice(family.thresholds[:-1]))
            question = _Question(family, threshold, day, up=bool(self.rng.random() < 0.5) if family.move else True)
            swapped = not family.move and bool(self.rng.random() < 0.5)
            p = float(self.rng.uniform(0.15, 0.85))
            kalshi = self._kalshi(question, p)
            polymarket = self._polymarket(question, swapped, i, 1.0 - p if swapped else p)
            self.pairs.append((polymarket.id, kalshi.id, "swapped" if swapped else "same"))
            step = family.thresholds[family.thresholds.index(threshold) + 1]
            decoys = [self._kalshi(_Question(family, step, day, question.up), p),  # another threshold
                      self._polymarket(_Question(family, threshold, self._day(family, 2 * slot + 1), question.up),
                                       swapped, i + 1, p)]  # another date
            if family.move:  # the other direction
                decoys.append(self._kalshi(_Question(family, threshold, day, not question.up), 1.0 - p))
            self.decoys.extend((m.platform, m.id) for m in decoys)

    def _day(self, family: _Family, slot: int) -> date:
        if family.monthly:
            month = self.config.end_day.replace(day=1) + timedelta(days=32 * (slot + 1))
            return month.replace(day=1)
        return self.config.end_day + timedelta(days=9 + 7 * slot)

    def _resolution(self, q: _Question, platform: Platform) -> datetime:
        day = q.day + timedelta(days=44) if q.family.monthly else q.day  # a month's figure is published later
        hours = 20 if platform == Platform.KALSHI else 23 + int(self.rng.integers(0, 30))  # the platforms differ
        return datetime.combine(day, datetime.min.time(), UTC) + timedelta(hours=hours)

    def _kalshi(self, q: _Question, p: float) -> Market:
        code = q.day.strftime("%y%b%d").upper()
        strike = f"T{q.threshold:g}" if not q.family.move else ("H" if q.up else "C") + f"{q.threshold:g}"
        event_id = f"KX{q.family.key}-{code}"
        market_id = f"{event_id}-{strike}"
        return self._market(Platform.KALSHI, market_id, market_id, event_id, q, _kalshi_title(q), p)

    def _polymarket(self, q: _Question, swapped: bool, variant: int, p: float) -> Market:
        self._number += 1 + int(self.rng.integers(0, 9))
        market_id = str(self._number)
        condition_id = "0x" + hashlib.blake2b(f"{self.config.seed}:linked:{market_id}".encode(),
                                              digest_size=32).hexdigest()
        title = _polymarket_title(q, swapped, variant)
        return self._market(Platform.POLYMARKET, market_id, condition_id, str(1_000_000 + int(market_id)), q, title, p)

    def _market(self, platform: Platform, market_id: str, platform_id: str, event_id: str, q: _Question,
                title: str, p: float) -> Market:
        cfg = self.config
        end = self._resolution(q, platform)
        start = cfg.window_start - timedelta(days=int(self.rng.integers(10, 40)))
        series_id = _series_id(platform, q.family)
        slug = market_id.lower() if platform == Platform.KALSHI else "-".join(title.lower().rstrip("?").split())
        if platform == Platform.KALSHI:
            outcomes = tuple(Outcome(key, label) for key, label in _YES_NO)
        else:
            outcomes = tuple(Outcome(str(10**76 + int(hashlib.blake2b(f"{platform_id}:{j}".encode()).hexdigest(), 16)
                                         % (9 * 10**76)), label) for j, (_k, label) in enumerate(_YES_NO))
        if all(e.id != event_id for e in self.events[platform]):  # a Kalshi ladder's rungs share their event
            self.events[platform].append(Event(platform, event_id, series_id, slug, title,
                                               f"{title} Listed on both.", q.family.category, start, end))
        market = Market(
            platform=platform, index=0, id=market_id, platform_id=platform_id, event_id=event_id,
            series_id=series_id, slug=slug, title=title,
            description=f"{title} Resolves by the official figure.", category=q.family.category,
            subcategory=None, tags=(q.family.category.lower(),), market_type=MarketType.BINARY, outcomes=outcomes,
            status=MarketStatus.OPEN, created_at=start - timedelta(hours=2), trading_start=start, trading_end=end,
            stopped_at=None, resolved_at=None, tick=0.01 if platform == Platform.KALSHI else 0.001,
            fee_rate=0.07 if platform == Platform.KALSHI else 0.0, initial_prices=(p, 1.0 - p),
            volatility=float(self.rng.uniform(0.002, 0.008)),
            trade_rate_per_hour=float(cfg.trades_per_market_day / 48.0),
            condition_id=platform_id if platform == Platform.POLYMARKET else None,
        )
        self.markets[platform].append(market)
        return market


def _series_id(platform: Platform, family: _Family) -> str:
    return f"KX{family.key}" if platform == Platform.KALSHI else "899999"


def linked_series(config: WorldConfig, platform: Platform) -> list[Series]:
    """The series the planted markets of a platform belong to: one per kind of question on Kalshi, one on
    Polymarket."""
    families = _FAMILIES[: config.linked_pairs] if platform == Platform.KALSHI else _FAMILIES[:1]
    return [Series(platform, _series_id(platform, f), _series_id(platform, f) if platform == Platform.KALSHI
                   else "listed-on-both", "Questions listed on both platforms", f.category, (f.category.lower(),),
                   "Questions both platforms list, each in its own words.") for f in families]


def planted_markets(config: WorldConfig, platform: Platform) -> tuple[list[Event], list[Market]]:
    """The planted events and markets of one platform (their `index` is set by the catalogue that holds them)."""
    planter = _planted(config)
    return planter.events[platform], planter.markets[platform]


def planted_links(config: WorldConfig) -> PlantedLinks:
    """Which planted markets are the same question on both platforms, and which are decoys."""
    planter = _planted(config)
    return PlantedLinks(tuple(planter.pairs), tuple(planter.decoys))


def _planted(config: WorldConfig) -> _Planter:
    planter = _Planter(config)
    planter.plant()
    return planter
