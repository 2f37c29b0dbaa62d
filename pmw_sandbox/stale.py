"""The reading `stale_listing`: a market listing whose records are not all as of the world's end.

A service lists records from its own copy of each platform, synced record by record (`last_synced_at`), so a
listed record may be hours or days older than the listing. Under the reading, one market in two is listed as a
sync a few hours after the later of its creation and the world's first moment left it: its trades, volumes,
prices and status as of then, and `last_synced_at` then. Half of those still trading half a day after that sync
show the end of trading they had then, half a day after the sync: their trading was extended since (the world's
end of trading is the final one). The world stays
the ground truth; a market's own record (`/markets/{id}`) is always as of the world's end.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime, timedelta

from pmw_sandbox.catalogue import Market, WorldConfig

EXTENSION = timedelta(hours=12)  # how long before the final end of trading an extended market's listed one was


@dataclass(frozen=True)
class Listed:
    """When the listed record of a market was synced, and the end of trading it shows."""

    synced: datetime
    trading_end: datetime


def listed(config: WorldConfig, market: Market) -> Listed | None:
    """How the stale listing shows the market (one in two, by its place in the catalogue); None for a record
    as of the world's end."""
    digest = int.from_bytes(hashlib.blake2b(f"{config.seed}:{market.platform.value}:{market.id}".encode(),
                                            digest_size=4).digest())
    synced = max(market.created_at, config.window_start) + timedelta(hours=1 + digest % 11)
    if market.index % 2 or synced >= config.as_of:
        return None
    extended = (market.index % 4 == 0 and market.trading_start < synced
                and market.live_until(config.as_of) > synced + EXTENSION)
    return Listed(synced, synced + EXTENSION if extended else market.trading_end)
