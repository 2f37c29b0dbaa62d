"""What extraction hands to normalisation: an API's answers as received (`RawPage`).

A source reads pages and says what each one is; `pipeline.engine.normalize.pages` turns them into rows.
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
    so that its rows can be attributed to them; `context` carries what a platform's normaliser needs from
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
