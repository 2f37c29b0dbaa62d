"""The sandbox world's catalogue: the series, events and markets of both platforms, and the configuration of the
world they are built from (catalogue_builder.py builds them)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from pipeline.engine.schema import MarketStatus, MarketType, Platform


@dataclass(frozen=True)
class WorldConfig:
    """What the synthetic world holds. Same config, same world, byte for byte."""

    seed: int = 7
    end: date | None = None  # last day of the window; None means yesterday (UTC)
    days: int = 7
    series_per_platform: int = 8
    events_per_series: int = 6
    markets_per_event: int = 8
    trades_per_market_day: float = 150.0
    multivariate_markets: int = 6
    linked_pairs: int = 6  # questions listed on both platforms, each with its decoys (linked_markets.py)
    archived_markets: int = 0  # per platform, resolved before the window (pmw_sandbox/archive.py)

    def __post_init__(self) -> None:
        if self.linked_pairs < 0:
            raise ValueError(f"WorldConfig.linked_pairs must be >= 0, got {self.linked_pairs}")
        for name in ("days", "series_per_platform", "events_per_series", "markets_per_event"):
            if getattr(self, name) < 1:
                raise ValueError(f"WorldConfig.{name} must be at least 1, got {getattr(self, name)}")
        if self.archived_markets < 0:
            raise ValueError(f"WorldConfig.archived_markets must be >= 0, got {self.archived_markets}")
        if self.trades_per_market_day < 0:
            raise ValueError(f"WorldConfig.trades_per_market_day must be >= 0, got {self.trades_per_market_day}")

    @property
    def end_day(self) -> date:
        return self.end or (datetime.now(UTC).date() - timedelta(days=1))

    @property
    def start_day(self) -> date:
        return self.end_day - timedelta(days=self.days - 1)

    @property
    def window_start(self) -> datetime:
        return datetime.combine(self.start_day, datetime.min.time(), UTC)

    @property
    def as_of(self) -> datetime:
        """The world's "now": midnight after the last day. Every state is as seen at this instant."""
        return datetime.combine(self.end_day + timedelta(days=1), datetime.min.time(), UTC)


@dataclass(frozen=True)
class Series:
    platform: Platform
    id: str
    slug: str
    title: str
    category: str
    tags: tuple[str, ...]
    description: str
    multivariate: bool = False


@dataclass(frozen=True)
class Event:
    platform: Platform
    id: str
    series_id: str
    slug: str
    title: str
    description: str
    category: str
    start: datetime
    end: datetime
    multivariate: bool = False


@dataclass(frozen=True)
class Outcome:
    id: str
    name: str


@dataclass(frozen=True)
class Market:
    platform: Platform
    index: int  # position in the platform's market list; seeds the market's activity
    id: str
    platform_id: str
    event_id: str
    series_id: str
    slug: str
    title: str
    description: str
    category: str
    subcategory: str | None
    tags: tuple[str, ...]
    market_type: MarketType
    outcomes: tuple[Outcome, ...]
    status: MarketStatus
    created_at: datetime
    trading_start: datetime
    trading_end: datetime  # scheduled close (a market still open at the world's end trades past it)
    stopped_at: datetime | None  # when a pause or a cancellation halted trading
    resolved_at: datetime | None
    tick: float
    fee_rate: float
    initial_prices: tuple[float, ...]
    volatility: float  # per-minute std-dev of the logit walk
    trade_rate_per_hour: float
    multivariate: bool = False
    condition_id: str | None = None

    def live_until(self, as_of: datetime) -> datetime:
        """The end of the interval in which the market could be traded: its scheduled close, unless it is still
        open at the world's end (`as_of`), as a Polymarket market stays open past its `endDate` until Gamma
        closes it."""
        ends = [as_of] if self.status == MarketStatus.OPEN else [self.trading_end, as_of]
        if self.stopped_at is not None:
            ends.append(self.stopped_at)
        if self.resolved_at is not None:
            ends.append(self.resolved_at)
        return min(ends)



@dataclass(frozen=True)
class Catalogue:
    series: tuple[Series, ...]
    events: tuple[Event, ...]
    markets: tuple[Market, ...]
