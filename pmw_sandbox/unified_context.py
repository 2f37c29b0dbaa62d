"""What every route of the unified API reads: the world, the readings and faults it is served under, the moment
its live answers show, and the fault dice of the request being answered."""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from pipeline.engine.schema import Platform
from pmw_sandbox.catalogue import Market
from pmw_sandbox.faults import Faults
from pmw_sandbox.readings import Readings
from pmw_sandbox.world import Record, World

_T = TypeVar("_T")


@dataclass
class Context:
    """The sandbox as its unified routes see it; the app rolls `dice` and a test or the demo moves `live_at`."""

    world: World
    readings: Readings
    faults: Faults
    dice: random.Random  # the fault dice of the request being answered
    # The moment of the world whose live answers (orderbooks, traders' profiles and trades) are served (None:
    # the world's now, `as_of`): a test or the demo moves it to take snapshots at chosen times of the world.
    live_at: datetime | None = None

    def now(self) -> datetime:
        """The moment the live answers show: `live_at`, else the world's now."""
        return self.live_at or self.world.as_of

    def ordered(self, items: list[_T]) -> list[_T]:
        """A list in the reading's order: the catalogue's, or reversed."""
        return items[::-1] if self.readings.list_order == "reversed" else items

    def asked_market(self, market_id: str, platform: Platform | None = None) -> Market | None:
        """The market a `market_id` parameter names: by its id or its platform_id (reading market_id_param=any),
        or by its platform_id alone (=platform: its id, where the two differ, names no market)."""
        market = self.world.find_market(market_id, platform)
        if market is not None and (self.readings.market_id_param == "any" or market.platform_id == market.id):
            return market
        return self.world.find_market_by_platform_id(market_id, platform)


def as_read(records: list[Record], key: str, market: Any, reading: str) -> None:
    """Put the market id a reading puts on rows under `key`: the unified id (as built), the platform's, none."""
    if reading == "unified":
        return
    for record in records:
        if reading == "platform":
            record[key] = market.platform_id
        elif reading == "absent":
            del record[key]
