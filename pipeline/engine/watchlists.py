"""Watch lists: the files that name the extra markets to snapshot and the traders to follow.

A watch list is a text file of `platform,id` lines (PMW_ORDERBOOK_WATCHLIST: `platform,market_id`;
PMW_TRADER_WATCHLIST: `platform,user`). Blank lines and lines starting with `#` are skipped, spaces around
either value are ignored, and a line listed twice counts once. Anything else is a ConfigError naming the file,
the line and what is wrong, raised when the settings are read, so that a bad list stops a run before its first
request.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pipeline.engine.schema import MARKET_PLATFORMS, ORDERBOOK_PLATFORMS, Platform

MAX_ID_CHARS = 100  # the unified API's bound on a profile's user identifier, applied to market ids too


@dataclass(frozen=True, order=True)
class WatchItem:
    """One line of a watch list: a platform and a market id or a user."""

    platform: Platform
    id: str


@dataclass(frozen=True)
class WatchlistKind:
    """What a watch list names: its variable, what its ids are, and the platforms they may be of."""

    variable: str
    id_label: str
    platforms: tuple[Platform, ...]


ORDERBOOK_WATCHLIST = WatchlistKind("PMW_ORDERBOOK_WATCHLIST", "market_id", ORDERBOOK_PLATFORMS)
TRADER_WATCHLIST = WatchlistKind("PMW_TRADER_WATCHLIST", "user", MARKET_PLATFORMS)


class WatchlistError(ValueError):
    """A watch list that cannot be used; the message names the file and the line."""


def read_watchlist(path: Path, kind: WatchlistKind) -> tuple[WatchItem, ...]:
    """The items of the file, in the order first listed, each once."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise WatchlistError(f"{kind.variable}={path}: cannot be read ({type(error).__name__}: {error})") from None
    items: dict[WatchItem, None] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        items.setdefault(_item(stripped, kind, f"{kind.variable}={path} line {number}"), None)
    return tuple(items)


def _item(line: str, kind: WatchlistKind, where: str) -> WatchItem:
    parts = [part.strip() for part in line.split(",")]
    if len(parts) != 2:
        raise WatchlistError(f"{where}: expected `platform,{kind.id_label}`, got {line!r}")
    platform, identifier = parts
    allowed = [p.value for p in kind.platforms]
    if platform not in allowed:
        raise WatchlistError(f"{where}: platform must be one of {', '.join(allowed)}, got {platform!r}")
    if not 1 <= len(identifier) <= MAX_ID_CHARS:
        raise WatchlistError(f"{where}: {kind.id_label} must be 1 to {MAX_ID_CHARS} characters, got {identifier!r}")
    return WatchItem(Platform(platform), identifier)
