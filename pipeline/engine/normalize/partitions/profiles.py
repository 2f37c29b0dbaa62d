"""The watched traders' rows of a (platform, day): their profiles (`profiles`) and their trades of the day
(`profile_trades`), read from the unified API (`sources.profiles`) and normalized (`normalize.profiles`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date

import polars as pl

from pipeline.engine.normalize.profiles import normalize_profiles, normalize_trader_trades
from pipeline.engine.normalized import Normalized
from pipeline.engine.schema import REJECTS_SCHEMA, WATCHLIST_TABLES
from pipeline.engine.sources.http import ApiError, HttpLayer
from pipeline.engine.sources.profiles import profile_answer, trader_trades


@dataclass(frozen=True)
class TradersRows:
    """The rows of each table read, by table; `failure`, when the trades could not be read (the profiles could)."""

    tables: dict[str, Normalized]
    failure: ApiError | None = None


def traders_rows(http: HttpLayer, platform: str, day: date, traders: Sequence[str], source: str) -> TradersRows:
    """Every trader's profile, then their trades of the day; without `profile_trades` when a trader's trades
    cannot be read (its partition is not replaced by a part of the day). `source` is the rows' lineage."""
    answers = [profile_answer(http, platform, trader) for trader in traders]
    try:
        histories = [t for trader in traders if (t := trader_trades(http, platform, trader, day))]
    except ApiError as error:
        return TradersRows({"profiles": normalize_profiles(answers, platform, day, source)}, error)
    return TradersRows({
        "profiles": normalize_profiles(answers, platform, day, source),
        "profile_trades": _concat([
            normalize_trader_trades(h.trades, h.conflicting, h.trader, platform, day, source, h.fetched_at)
            for h in histories], "profile_trades"),
    })


def _concat(parts: list[Normalized], table: str) -> Normalized:
    """Several traders' rows and rejects as one (the table's empty frames when there are none)."""
    schema = WATCHLIST_TABLES[table].polars_schema
    rows = pl.concat([pl.DataFrame(schema=schema), *(p.rows for p in parts)])
    rejects = pl.concat([pl.DataFrame(schema=REJECTS_SCHEMA), *(p.rejects for p in parts)])
    return Normalized(rows, rejects)
