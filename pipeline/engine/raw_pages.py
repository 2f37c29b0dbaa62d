"""What extraction hands to normalization: an API's answers as received.

A list's answers are `RawPage`s; a lone answer has its own type (`BookAnswer`, `ProfileAnswer`, `ServiceStatus`,
a sports `Detail`). Sources make them and normalizers read them, so neither imports the other; a source says
what each page is, and `pipeline.engine.normalize.pages` turns pages into rows.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any

UNIFIED = "unified"  # the unified API (or the sandbox, which speaks it); otherwise a platform's own API


@dataclass(frozen=True)
class RawPage:
    """One answer of an API, as received, with what the request knew that the answer does not say.

    `body` is the answer's JSON without the items met on earlier pages of the same list; `items_key` is where
    it holds its items (None: the body is the array). `asked_for` names the markets the request asked about,
    so that its rows can be attributed to them; `context` carries what a platform's normalizer needs from
    the request (`pipeline.engine.normalize.native`: a market id, an outcome id, a candle interval).
    `conflicting` holds the page's items that repeat an identity met before with other values
    (`pipeline.engine.sources.paging`): not in `body`, they are rejected with the reason.
    """

    api: str  # UNIFIED, or the platform whose own API answered
    entity: str  # the table the records are of: series, events, markets, trades or price_history
    platform: str  # the partition's
    day: date  # the partition's
    fetched_at: datetime
    body: Any
    items_key: str | None
    asked_for: tuple[str, ...] = ()
    context: Mapping[str, str] = field(default_factory=dict)
    conflicting: list[Any] = field(default_factory=list)

    @property
    def records(self) -> list[Any]:
        """The items of the page."""
        return self.body if self.items_key is None else self.body[self.items_key]


@dataclass(frozen=True)
class BookAnswer:
    """One orderbook answer as received: the market asked for, the body, and when it came."""

    market_id: str
    body: Any
    fetched_at: datetime


@dataclass(frozen=True)
class ProfileAnswer:
    """One `/profile/info` answer as received: the trader asked for, the body, and when it came."""

    trader: str
    body: Any
    fetched_at: datetime


@dataclass(frozen=True)
class Answered:
    """One endpoint's answer: its JSON body, or why there is none."""

    body: Any = None
    error: str | None = None


@dataclass(frozen=True)
class ServiceStatus:
    """One observation: when it was made (UTC, to the second: the name of its file in the lake) and the answers."""

    observed_at: datetime
    platforms: Answered
    health: Answered


@dataclass(frozen=True)
class Detail:
    """One future's or award's detail as answered, with what was asked: its kind and id; `problem` says why there is
    no detail to read (the server had none), and makes it a reject."""

    kind: str
    asked_id: str
    record: Any
    problem: str | None = None
