"""The backfill sensor's arithmetic: how much work one tick may queue within the API's request budget.

Free of Dagster so that it can be read and tested on its own. The formula (horizon, capacity, backoff, reserve)
and a partition's estimated cost are explained in docs/design.md, "The request budget".
"""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import date, timedelta

import dagster as dg

DEFAULT_PARTITION_COST = 300.0  # requests of one (platform, day) before any has been materialised
MAX_BACKOFF_LEVEL = 3  # at most 1/8 of the capacity after repeated 429s


@dataclass(frozen=True, order=True)
class PartitionRef:
    """One (day, platform) partition of the ingestion assets."""

    day: date
    platform: str

    @property
    def key(self) -> dg.MultiPartitionKey:
        return dg.MultiPartitionKey({"date": self.day.isoformat(), "platform": self.platform})

    @classmethod
    def parse(cls, key: str) -> PartitionRef:
        """`2026-11-20|kalshi` (Dagster's string form: dimensions in name order, date then platform)."""
        day, _, platform = key.partition("|")
        try:
            return cls(date.fromisoformat(day), platform)
        except ValueError:
            raise ValueError(f"not a date|platform partition key: {key!r}") from None

    def __str__(self) -> str:
        return f"{self.day} {self.platform}"


@dataclass(frozen=True)
class Sample:
    """What one recorded materialisation says about the API: its requests and the 429s it met."""

    platform: str
    asset: str
    requests: int
    rate_limited: int
    storage_id: int
    window_days: int = 1  # landed from a window of this many days: its requests are the window's sweep, or none


@dataclass(frozen=True)
class CostModel:
    """Expected requests per (platform, asset), the median of recent materialisations."""

    assets: tuple[str, ...]
    medians: Mapping[tuple[str, str], float] = field(default_factory=dict)

    @classmethod
    def from_samples(cls, assets: Sequence[str], samples: Iterable[Sample]) -> CostModel:
        """Each sample counts its requests; one landed from a window counts its share of the window's sweep
        (the sweep's requests over the window's days), and one served by a sweep another day made is left out."""
        observed: dict[tuple[str, str], list[float]] = defaultdict(list)
        for sample in samples:
            if sample.window_days > 1 and sample.requests == 0:
                continue
            observed[(sample.platform, sample.asset)].append(sample.requests / sample.window_days)
        return cls(tuple(assets), {key: float(statistics.median(values)) for key, values in observed.items()})

    def cost(self, platform: str, assets: Iterable[str] | None = None) -> float:
        """Requests that materialising `assets` (default: all) of one partition of `platform` will take."""
        default = DEFAULT_PARTITION_COST / len(self.assets)
        return sum(self.medians.get((platform, asset), default) for asset in (assets or self.assets))

    def largest(self, platforms: Iterable[str]) -> float:
        return max((self.cost(p) for p in platforms), default=DEFAULT_PARTITION_COST)


@dataclass(frozen=True)
class Budget:
    """The requests the sensor may ask for on one tick, with every term, so that the UI can say why."""

    rate_per_window: int  # requests the API allows per `window_s`
    horizon_s: float
    backoff_level: int
    in_flight: float
    reserve: float
    window_s: float = 60.0

    @property
    def capacity(self) -> float:
        return self.rate_per_window * self.horizon_s / self.window_s

    @property
    def available(self) -> float:
        return max(0.0, self.capacity / 2**self.backoff_level - self.in_flight - self.reserve)

    def describe(self) -> str:
        backoff = f" halved {self.backoff_level}x after 429s," if self.backoff_level else ""
        return (
            f"budget {self.available:.0f} requests = {self.capacity:.0f} over the next {self.horizon_s:.0f} s "
            f"at {_rate(self.rate_per_window, self.window_s)},{backoff} "
            f"minus {self.in_flight:.0f} for queued and running runs, "
            f"minus {self.reserve:.0f} reserved for the daily run"
        )


def _rate(per_window: int, window_s: float) -> str:
    return f"{per_window}/min" if window_s == 60.0 else f"{per_window} per {window_s:g} s"


def horizon_for(rate_per_window: int, interval_s: float, largest_partition: float, window_s: float = 60.0) -> float:
    """Seconds of API time one tick plans for: until the next tick, plus the largest partition at full rate
    (`rate_per_window` requests per `window_s` seconds)."""
    return interval_s + window_s * largest_partition / rate_per_window


def next_backoff_level(level: int, saw_new_429s: bool) -> int:
    return min(level + 1, MAX_BACKOFF_LEVEL) if saw_new_429s else max(level - 1, 0)


def window(start: date, end: date, platforms: Sequence[str], newest_first: bool) -> list[PartitionRef]:
    """Every partition from `start` to `end`, days in the configured order, platforms in theirs."""
    days = [start + timedelta(days=n) for n in range((end - start).days + 1)]
    if newest_first:
        days.reverse()
    return [PartitionRef(day, platform) for day in days for platform in platforms]


def take_within(
    candidates: Sequence[PartitionRef], cost: Callable[[PartitionRef], float], available: float
) -> list[PartitionRef]:
    """The longest prefix of `candidates` whose estimated cost fits: the configured order is kept."""
    chosen: list[PartitionRef] = []
    spent = 0.0
    for candidate in candidates:
        spent += cost(candidate)
        if spent > available:
            break
        chosen.append(candidate)
    return chosen


@dataclass
class SensorCursor:
    """What the sensor keeps between ticks (JSON): its 429 watermark and back-off, and its progress."""

    watermark: int = 0  # storage id of the newest materialisation already inspected for 429s
    backoff_level: int = 0
    window: str = ""  # first..last day of the history window
    partitions: int = 0
    landed: int = 0
    in_flight: int = 0
    requested: int = 0  # on the last tick
    given_up: list[str] = field(default_factory=list)  # partitions that failed too often to retry
    available: float = 0.0  # the last tick's budget in requests, and how it came about
    budget: str = ""

    @classmethod
    def parse(cls, raw: str | None) -> SensorCursor:
        if not raw:
            return cls()
        try:
            values = json.loads(raw)
            return cls(watermark=int(values["watermark"]), backoff_level=int(values["backoff_level"]))
        except (ValueError, KeyError, TypeError) as error:
            raise ValueError(f"unreadable backfill sensor cursor {raw!r}: {error}") from None

    def dump(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)
