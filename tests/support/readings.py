"""The sandbox's readings (`pmw_sandbox.readings`) as the tests go through them: every switch away from its
default at once, each reading alone, and whether a reading changes what the market endpoints serve."""

from __future__ import annotations

from dataclasses import fields

from pmw_sandbox.readings import CHOICES, Readings

# Switches that change no market endpoint, only the orderbooks' or the sports endpoints: the market tables'
# readings matrix (tests/defs/ingestion/test_readings.py) leaves them out;
# tests/defs/orderbooks/test_orderbooks.py lands books under `book_order`, tests/engine/test_sports.py the sports
# tables under `american_odds` and `award_detail`,
# tests/defs/profiles/test_profiles.py the traders' tables under `profile_trades_envelope`, and
# tests/defs/ingestion/test_platform_status.py the holds under `unavailable_status`.
NOT_MARKETS = frozenset({"book_order", "american_odds", "award_detail", "profile_trades_envelope",
                         "unavailable_status"})


def every_other() -> Readings:
    """Every switch away from its default (the last reading of each)."""
    return Readings(**{f.name: CHOICES[f.name][-1] if f.name in CHOICES else True for f in fields(Readings)})


def each_alone() -> list[Readings]:
    """One Readings per non-default reading of one switch, the others at their default."""
    alone = [Readings(**{name: value}) for name, allowed in CHOICES.items() for value in allowed[1:]]
    flags = [f.name for f in fields(Readings) if f.name not in CHOICES]
    return alone + [Readings(**{name: True}) for name in flags]


def changes_markets(readings: Readings) -> bool:
    """Whether a switch that the market endpoints read is away from its default."""
    default = Readings()
    return any(getattr(readings, f.name) != getattr(default, f.name)
               for f in fields(readings) if f.name not in NOT_MARKETS)
