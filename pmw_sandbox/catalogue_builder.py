"""The sandbox world's catalogue: series, events and markets of both platforms, built from a seed.

Identifiers follow each platform's real shapes: Polymarket numeric ids, 0x condition ids and 77-digit CLOB
token ids; Kalshi series, event and market tickers (``KXBTCD``, ``KXBTCD-26NOV21``,
``KXBTCD-26NOV21-T95000``). Every status appears, some markets resolve inside the window, and Kalshi has
multivariate (MVE) markets that the unified API must never show.
"""

from __future__ import annotations

import hashlib
from dataclasses import replace
from datetime import UTC, date, datetime, timedelta

import numpy as np

from pipeline.engine.schema import MarketStatus, MarketType, Platform
from pmw_sandbox.catalogue import Catalogue, Event, Market, Outcome, Series, WorldConfig
from pmw_sandbox.linked_markets import linked_series, planted_markets
from pmw_sandbox.series_templates import (
    KALSHI_TEMPLATES,
    POLITICS_QUESTIONS,
    POLYMARKET_TEMPLATES,
    SeriesTemplate,
    teams_of,
    yes_no,
)


def _hex(*parts: object, nbytes: int = 32) -> str:
    return hashlib.blake2b(":".join(map(str, parts)).encode(), digest_size=nbytes).hexdigest()


def _token_id(*parts: object) -> str:
    """A 77-digit CLOB token id, as Polymarket writes them (a uint256 in decimal)."""
    return str(10**76 + int(_hex("token", *parts), 16) % (9 * 10**76))


def _kalshi_date(day: date) -> str:
    return day.strftime("%y%b%d").upper()  # 26NOV21


def _iso_day(day: date) -> str:
    return day.strftime("%B %-d, %Y")


class _CatalogueBuilder:
    def __init__(self, config: WorldConfig, platform: Platform) -> None:
        self.config = config
        self.platform = platform
        self.rng = np.random.default_rng([config.seed, 1 if platform == Platform.POLYMARKET else 2])
        self.series: list[Series] = []
        self.events: list[Event] = []
        self.markets: list[Market] = []
        self._number = 10_000 + int(self.rng.integers(0, 5_000))  # Polymarket numeric ids grow from here

    def next_number(self) -> str:
        self._number += int(self.rng.integers(1, 40))
        return str(self._number)

    def build(self) -> Catalogue:
        templates = POLYMARKET_TEMPLATES if self.platform == Platform.POLYMARKET else KALSHI_TEMPLATES
        for i in range(self.config.series_per_platform):
            template = templates[i % len(templates)]
            generation = i // len(templates)
            self._add_series(template, generation)
        if self.platform == Platform.KALSHI and self.config.multivariate_markets > 0:
            self._add_multivariate()
        self._ensure_every_status()
        if self.platform == Platform.POLYMARKET:
            self._outlive_end()
        self._add_linked()
        return Catalogue(tuple(self.series), tuple(self.events), tuple(self.markets))

    # -- series and events -------------------------------------------------------------------------

    def _add_series(self, template: SeriesTemplate, generation: int) -> None:
        suffix = "" if generation == 0 else str(generation + 1)
        if self.platform == Platform.KALSHI:
            series_id = slug = f"{template.key}{suffix}"
        else:
            series_id, slug = self.next_number(), f"{template.key}{'-' + suffix if suffix else ''}"
        title = template.title + (f" ({generation + 1})" if generation else "")
        series = Series(
            platform=self.platform,
            id=series_id,
            slug=slug,
            title=title,
            category=template.category,
            tags=template.tags,
            description=f"{title}: a recurring {template.category.lower()} series.",
        )
        self.series.append(series)
        cfg = self.config
        for e in range(cfg.events_per_series):
            start, end = self._event_window(template, e)
            self._add_event(series, template, e, start, end)

    def _event_window(self, template: SeriesTemplate, e: int) -> tuple[datetime, datetime]:
        cfg, rng = self.config, self.rng
        if template.daily:
            # Spread the series' daily events over the window, newest first; each resolves that evening.
            offset = (e * max(1, cfg.days // cfg.events_per_series)) % cfg.days
            day = cfg.end_day - timedelta(days=offset)
            end = datetime.combine(day, datetime.min.time(), UTC) + timedelta(hours=21)
            start = end - timedelta(hours=int(rng.integers(30, 72)))
        else:
            start = cfg.window_start - timedelta(days=int(rng.integers(3, 60)), hours=int(rng.integers(0, 24)))
            if rng.random() < 0.35:  # closes inside the window
                end = cfg.window_start + timedelta(minutes=int(rng.integers(60, cfg.days * 1440 - 60)))
            else:
                end = cfg.as_of + timedelta(days=int(rng.integers(5, 120)), hours=int(rng.integers(0, 24)))
        return start, end

    def _add_event(self, series: Series, template: SeriesTemplate, e: int, start: datetime, end: datetime) -> None:
        rng, day = self.rng, end.date()
        outcome_pairs = template.outcomes(rng, e)
        if self.platform == Platform.KALSHI:
            code = _kalshi_date(day)
            teams: tuple[tuple[str, str], ...] = ()
            if template.key.startswith("KXNBAGAME"):
                teams = teams_of(rng, e)
                code += teams[0][1] + teams[1][1]
            event_id = slug = self._unique_event_id(f"{series.id}-{code}")
            title = f"{series.title} on {_iso_day(day)}"
            if teams:
                title = f"{teams[0][1]} at {teams[1][1]} on {_iso_day(day)}"
        else:
            event_id = self.next_number()
            title = self._polymarket_event_title(template, day, outcome_pairs, e)
            slug = title.lower().replace("?", "").replace(",", "").replace(" ", "-")
        event = Event(
            platform=self.platform,
            id=event_id,
            series_id=series.id,
            slug=slug,
            title=title,
            description=f"{title} Resolution follows the official source of the {series.title} series.",
            category=series.category,
            start=start,
            end=end,
        )
        self.events.append(event)
        n_markets = int(rng.integers(1, 2 * self.config.markets_per_event))
        if template.key.startswith("nba"):
            n_markets = 1  # one moneyline market whose outcomes are the two teams
        if template.market_type == MarketType.CATEGORICAL:
            n_markets = max(1, n_markets // 2)
        if self.platform == Platform.KALSHI and template.key.startswith("KXNBAGAME"):
            n_markets = 2  # one market per team: KXNBAGAME-26NOV21LALBOS-LAL
        for k in range(n_markets):
            self._add_market(series, event, template, k, outcome_pairs)

    def _unique_event_id(self, candidate: str) -> str:
        taken = {e.id for e in self.events}
        suffix, event_id = 1, candidate
        while event_id in taken:
            suffix += 1
            event_id = f"{candidate}{suffix}"
        return event_id

    @staticmethod
    def _polymarket_event_title(
        template: SeriesTemplate, day: date, outcomes: tuple[tuple[str, str], ...], e: int
    ) -> str:
        when = _iso_day(day)
        if template.key.startswith("btc"):
            return f"Bitcoin Up or Down on {when}?"
        if template.key.startswith("nba"):
            return f"{outcomes[0][1]} vs. {outcomes[1][1]} on {when}"
        if template.key.startswith("fed"):
            return f"Fed decision in {day.strftime('%B %Y')}?"
        if template.key.startswith("eth"):
            return f"Ethereum price range, week of {when}"
        return POLITICS_QUESTIONS[e % len(POLITICS_QUESTIONS)].format(d=when)

    # -- markets -----------------------------------------------------------------------------------

    def _add_market(
        self,
        series: Series,
        event: Event,
        template: SeriesTemplate,
        k: int,
        outcome_pairs: tuple[tuple[str, str], ...],
        multivariate: bool = False,
    ) -> None:
        cfg, rng = self.config, self.rng
        index = len(self.markets)
        if self.platform == Platform.KALSHI:
            market_id = platform_id = f"{event.id}-{self._kalshi_strike(template, event, k)}"
            slug = market_id.lower()
            condition_id = None
            outcomes = tuple(Outcome(key, label) for key, label in outcome_pairs)
        else:
            market_id = self.next_number()
            condition_id = "0x" + _hex(cfg.seed, "condition", market_id)
            platform_id = condition_id
            slug = f"{event.slug}-{k}" if k else event.slug
            outcomes = tuple(
                Outcome(_token_id(cfg.seed, market_id, j), label) for j, (_key, label) in enumerate(outcome_pairs)
            )
        title = self._market_title(template, event, k)
        status, stopped_at, resolved_at = self._lifecycle(event)
        n = len(outcomes)
        if n == 2:
            p = float(rng.uniform(0.08, 0.92))
            initial = (p, 1.0 - p)
        else:
            weights = rng.dirichlet(np.ones(n) * 1.5)
            initial = tuple(float(w) for w in weights)
        created = event.start - timedelta(minutes=int(rng.integers(5, 600)))
        trading_start = event.start
        if not multivariate and rng.random() < 0.2:
            # Some markets open part-way through the window, hours before their event closes.
            latest = min(event.end, cfg.as_of) - timedelta(hours=3)
            later = cfg.window_start + timedelta(minutes=int(rng.integers(0, 2880)))
            trading_start = max(trading_start, min(later, latest))
        self.markets.append(
            Market(
                platform=self.platform,
                index=index,
                id=market_id,
                platform_id=platform_id,
                event_id=event.id,
                series_id=series.id,
                slug=slug,
                title=title,
                description=f"{title} This market resolves according to the rules of the {series.title} series.",
                category=series.category,
                subcategory=template.tags[-1] if len(template.tags) > 1 else None,
                tags=template.tags,
                market_type=template.market_type,
                outcomes=outcomes,
                status=status,
                created_at=created,
                trading_start=trading_start,
                trading_end=event.end,
                stopped_at=stopped_at,
                resolved_at=resolved_at,
                tick=0.01 if self.platform == Platform.KALSHI else 0.001,
                fee_rate=_fee_rate(self.platform, series.category),
                initial_prices=initial,
                volatility=float(rng.uniform(0.004, 0.02)),
                trade_rate_per_hour=float(cfg.trades_per_market_day / 24.0 * rng.lognormal(-0.5, 1.0)),
                multivariate=multivariate,
                condition_id=condition_id,
            )
        )

    def _kalshi_strike(self, template: SeriesTemplate, event: Event, k: int) -> str:
        key = template.key
        if key.startswith("KXBTCD"):
            return f"T{90000 + 1000 * k}"
        if key.startswith("KXHIGHNY"):
            return f"B{44 + 2 * k}.5"
        if key.startswith("KXFED"):
            return f"T{3.5 + 0.25 * k:.2f}"
        if key.startswith("KXCPIYOY"):
            return f"S{k + 1}"
        teams = event.id.rsplit("-", 1)[-1][-6:]  # ...26NOV21LALBOS -> LALBOS
        return teams[3 * (k % 2) : 3 * (k % 2) + 3]

    def _market_title(self, template: SeriesTemplate, event: Event, k: int) -> str:
        key, when = template.key, _iso_day(event.end.date())
        if key.startswith("KXBTCD"):
            return f"Bitcoin above ${90000 + 1000 * k:,} on {when} at 4pm EST?"
        if key.startswith("KXHIGHNY"):
            return f"Will the high temp in NYC be {44 + 2 * k}-{45 + 2 * k} on {when}?"
        if key.startswith("KXFED"):
            return f"Fed funds upper bound above {3.5 + 0.25 * k:.2f}% after the {when} meeting?"
        if key.startswith("KXCPIYOY"):
            return f"CPI year over year for {event.end.strftime('%B %Y')} (range {k + 1})"
        if key.startswith("KXNBA"):
            team = event.id.rsplit("-", 1)[-1][-6:][3 * (k % 2) : 3 * (k % 2) + 3]
            return f"Will {team} win: {event.title}?"
        if key.startswith("nba"):
            return event.title
        return event.title if k == 0 else f"{event.title} (variant {k + 1})"

    def _lifecycle(self, event: Event) -> tuple[MarketStatus, datetime | None, datetime | None]:
        """Status as of the world's end, with the moment a pause/cancel halted trading or it resolved."""
        cfg, rng = self.config, self.rng
        if event.end <= cfg.as_of:
            if rng.random() < 0.1:
                stopped = event.end - timedelta(minutes=int(rng.integers(30, 600)))
                return MarketStatus.CANCELLED, max(stopped, event.start + timedelta(minutes=30)), None
            return MarketStatus.RESOLVED, None, event.end + timedelta(minutes=int(rng.integers(5, 120)))
        if rng.random() < 0.12:
            return MarketStatus.PAUSED, cfg.as_of - timedelta(minutes=int(rng.integers(60, 2880))), None
        return MarketStatus.OPEN, None, None

    def _ensure_every_status(self) -> None:
        """A small world still shows every status: convert the last markets that qualify if one is missing."""
        present = {m.status for m in self.markets if not m.multivariate}
        as_of = self.config.as_of
        for wanted in (MarketStatus.CANCELLED, MarketStatus.PAUSED):
            if wanted in present:
                continue
            source = MarketStatus.RESOLVED if wanted == MarketStatus.CANCELLED else MarketStatus.OPEN
            for i in range(len(self.markets) - 1, -1, -1):
                m = self.markets[i]
                if m.status == source and not m.multivariate:
                    halt = (m.trading_end if wanted == MarketStatus.CANCELLED else as_of) - timedelta(hours=2)
                    self.markets[i] = _replace_status(m, wanted, max(halt, m.trading_start + timedelta(minutes=30)))
                    break

    def _outlive_end(self) -> None:
        """One Polymarket market stays open past its scheduled end (as Gamma keeps a market open past its
        `endDate` until it closes it): the last resolved one whose end falls inside the window before its last
        day, so that it trades on at least one whole day after its end."""
        window_start, last_day = self.config.window_start, self.config.end_day
        for i in range(len(self.markets) - 1, -1, -1):
            m = self.markets[i]
            if (m.status == MarketStatus.RESOLVED and not m.multivariate and m.trading_start < m.trading_end
                    and window_start <= m.trading_end and m.trading_end.date() < last_day):
                self.markets[i] = replace(m, status=MarketStatus.OPEN, stopped_at=None, resolved_at=None)
                return

    def _add_linked(self) -> None:
        """The questions this platform lists as the other does too, and their decoys (linked_markets.py)."""
        events, markets = planted_markets(self.config, self.platform)
        if not markets:
            return
        self.series.extend(linked_series(self.config, self.platform))
        self.events.extend(events)
        self.markets.extend(replace(m, index=len(self.markets) + k) for k, m in enumerate(markets))

    def _add_multivariate(self) -> None:
        """Kalshi multivariate (parlay) markets: present in the platform, filtered out by the unified API."""
        cfg = self.config
        series = Series(
            platform=self.platform,
            id="KXMVENFLSINGLEGAME",
            slug="KXMVENFLSINGLEGAME",
            title="Multi-leg single game combos",
            category="Sports",
            tags=("sports", "combo"),
            description="Multivariate combinations of single-game markets.",
            multivariate=True,
        )
        self.series.append(series)
        start = cfg.window_start - timedelta(days=1)
        event = Event(
            platform=self.platform,
            id=f"KXMVENFLSINGLEGAME-S{cfg.end_day.year}{_hex(cfg.seed, 'mve', nbytes=5).upper()}",
            series_id=series.id,
            slug="kxmvenflsinglegame",
            title="Single game combos",
            description="Multivariate event.",
            category="Sports",
            start=start,
            end=cfg.as_of + timedelta(days=10),
            multivariate=True,
        )
        self.events.append(event)
        template = SeriesTemplate(series.id, series.title, "Sports", series.tags, MarketType.BINARY, False, yes_no)
        for k in range(cfg.multivariate_markets):
            before = len(self.markets)
            self._add_market(series, event, template, k, yes_no(self.rng, k), multivariate=True)
            m = self.markets[before]
            mve_id = f"{event.id}-{_hex(cfg.seed, 'mve-leg', k, nbytes=6).upper()}"
            self.markets[before] = _with_ids(m, mve_id)


def _replace_status(m: Market, status: MarketStatus, halted_at: datetime) -> Market:
    return replace(m, status=status, stopped_at=halted_at, resolved_at=None)


def _with_ids(m: Market, market_id: str) -> Market:
    return replace(m, id=market_id, platform_id=market_id, slug=market_id.lower())


def build_catalogue(config: WorldConfig, platform: Platform) -> Catalogue:
    return _CatalogueBuilder(config, platform).build()


# Polymarket charges takers a fee on some categories only (docs.polymarket.com/trading/fees); Kalshi on all.
_POLYMARKET_FEES = {"Sports": 0.03, "Crypto": 0.072}


def _fee_rate(platform: Platform, category: str) -> float:
    return 0.07 if platform == Platform.KALSHI else _POLYMARKET_FEES.get(category, 0.0)
