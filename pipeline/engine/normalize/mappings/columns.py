"""The shape of a mapping (where each warehouse column of a platform's table comes from) and the notes that hold
for every mapping."""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.engine.schema import Platform


@dataclass(frozen=True)
class ColumnSource:
    """Where one warehouse column comes from: the native field(s) and the rule or unit, in Markdown."""

    column: str
    native: str
    note: str = ""


@dataclass(frozen=True)
class EntityMapping:
    """What one native endpoint's records become: a table, column by column (unnamed columns stay null)."""

    platform: Platform
    entity: str  # the `entity` of `normalize_native`
    endpoint: str
    table: str
    columns: tuple[ColumnSource, ...]


SYNCED = ColumnSource("last_synced_at", "none", "the fetch time (`fetched_at`): when the platform was read")
# Both platforms write an empty side of a book as a price no order rests at (Kalshi quotes 1 to 99 cents,
# Polymarket's CLOB one tick above 0 to one tick below 1).
EMPTY_SIDE = "A bid or ask of 0 or 1 is an empty side of the book, no quote: null."

# Rules that hold for every mapping, rendered above the tables.
NOTES: tuple[str, ...] = (
    "`platform`, `date`, `_source` (`direct`) and `_fetched_at` come from the call; a column a table does not "
    "list stays null, because the platform does not send it.",
    'An empty string is stored as null in optional text columns: both platforms write "no value" that way.',
    "Kalshi sends prices twice, as dollar strings (`*_dollars`) and deprecated integer cents, and counts twice, "
    "as fixed-point strings (`*_fp`) and deprecated integers: the strings are read first, the old fields only "
    "when a string is absent, and a string that is no number rejects its record. Cents become dollars rounded "
    "to 6 decimals (Kalshi's finest), so that 35 cents is 0.35, not 0.35000000000000003.",
    "A record whose fields have the wrong JSON type, lack a required value, or hold a value no rule maps is "
    "a reject, with the reason; a body of the wrong shape, or a missing context value, is an error.",
)
