"""How much of a partition a source could reach, reported as metadata, never hidden."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


@dataclass
class Coverage:
    """How much of the partition the source could reach; reported as metadata, never hidden.

    `incomplete` names the markets whose day the source could not read to its start (the Polymarket Data API
    stops paging past an offset cap), each with the oldest moment it did reach.
    """

    incomplete: dict[str, datetime] = field(default_factory=dict)

    def as_metadata(self) -> dict[str, Any]:
        if not self.incomplete:
            return {"complete": True}
        shown = dict(sorted(self.incomplete.items())[:20])
        return {
            "complete": False,
            "incomplete_markets": len(self.incomplete),
            "reached_back_to": min(self.incomplete.values()).isoformat(),
            "incomplete_examples": {market: moment.isoformat() for market, moment in shown.items()},
        }
