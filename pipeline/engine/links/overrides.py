"""The analyst's file of pairs (PMW_MARKET_LINKS): `polymarket_id,kalshi_id,verdict[,outcome_map]` lines, the
verdict `confirmed` or `rejected`, the outcome map `same` or `swapped` (a confirmed pair without one takes the
matcher's, else `same`). A header line with those names is optional; `#` starts a comment line.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path

import polars as pl

from pipeline.engine.schema.links import OutcomeMap

COLUMNS = ("polymarket_id", "kalshi_id", "verdict", "outcome_map")
HEADER = ",".join(COLUMNS)


class Verdict(StrEnum):
    CONFIRMED = "confirmed"
    REJECTED = "rejected"


class OverridesError(ValueError):
    """A line of the PMW_MARKET_LINKS file that cannot be read; the message names the file and the line."""


def read_overrides(path: Path | None) -> pl.DataFrame:
    """The file's pairs (COLUMNS, outcome_map null where not given); an empty frame when there is no file."""
    empty = pl.DataFrame(schema={name: pl.String() for name in COLUMNS})
    if path is None:
        return empty
    if not path.is_file():
        raise OverridesError(f"PMW_MARKET_LINKS names {path}, which is not a file")
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        text = line.strip()
        if not text or text.startswith("#") or text.replace(" ", "").startswith(HEADER[:24]):
            continue
        cells = [cell.strip() for cell in text.split(",")]
        rows.append(_checked(path, number, cells))
    pairs = pl.DataFrame(rows, schema=empty.schema, orient="row")
    return pairs.unique(["polymarket_id", "kalshi_id"], keep="last", maintain_order=True)  # a later line wins


def _checked(path: Path, number: int, cells: list[str]) -> tuple[str, str, str, str | None]:
    where = f"{path}, line {number}"
    if len(cells) not in (3, 4) or not cells[0] or not cells[1]:
        raise OverridesError(f"{where}: expected polymarket_id,kalshi_id,confirmed|rejected[,same|swapped], "
                             f"got {','.join(cells)!r}")
    if cells[2] not in tuple(Verdict):
        raise OverridesError(f"{where}: verdict {cells[2]!r}, expected confirmed or rejected")
    outcome_map = cells[3] if len(cells) == 4 and cells[3] else None
    if outcome_map is not None and outcome_map not in tuple(OutcomeMap):
        raise OverridesError(f"{where}: outcome map {outcome_map!r}, expected same or swapped")
    return cells[0], cells[1], cells[2], outcome_map


def override_line(polymarket_id: str, kalshi_id: str, verdict: Verdict, outcome_map: str) -> str:
    """The line of the file that records an analyst's verdict on a pair."""
    return ",".join((polymarket_id, kalshi_id, verdict.value, outcome_map))
