"""The unified API's sports answers as rows of the sports tables: leagues, teams, futures, awards, future_odds.

Records are read against their table's documented fields by the exact JSON-type builder of
`pipeline.engine.normalize.wire_frame`, so every record becomes a row or a reject with the reason. Rows belong to
what the pipeline asked for, whatever a field says: the partition's `league` is the league asked, and an odds row's
`future_id` and `kind` are those of the detail asked (`/futures/{id}` or `/awards/{id}`), not the detail's own
`id`. A future's detail nests its outcomes under one market per platform; they are flattened in polars into one
row per platform, market and outcome, with the `odds` object spread over three columns; American odds are kept
signed (`+350`, `-200`), whether the server wrote the plus sign or not.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from pipeline.engine.normalize.rows import rejects_frame, rows, utc, value_reason
from pipeline.engine.normalize.wire_frame import build
from pipeline.engine.normalized import Normalized
from pipeline.engine.raw_pages import Detail
from pipeline.engine.schema import FUTURE_MARKET, FUTURE_ODDS, SPORTS_TABLES

NO_MARKETS = "the detail has no 'markets' array"


@dataclass(frozen=True)
class Lineage:
    """What the request knew: the partition (league, day), where the rows came from and when."""

    league: str
    day: dt.date
    source: str
    fetched_at: dt.datetime

    def columns(self) -> dict[str, Any]:
        return {"league": self.league, "date": self.day, "_source": self.source, "_fetched_at": utc(self.fetched_at)}


def normalize_records(table: str, records: list[Any], lineage: Lineage) -> Normalized:
    """Records of `leagues`, `teams`, `futures` or `awards` as rows; the others rejected with the reason."""
    spec = SPORTS_TABLES[table]
    kept, frame, rejected = build(spec.fields, records)
    reasons = frame.select(value_reason(spec.fields)).to_series()
    bad = reasons.is_not_null()
    rejected += zip((kept[i] for i in bad.arg_true()), reasons.filter(bad), strict=True)
    landed = rows(spec, frame.filter(~bad), lineage.columns())
    return Normalized(landed, rejects_frame(rejected, lineage.fetched_at))


def normalize_odds(details: Sequence[Detail], lineage: Lineage) -> Normalized:
    """The details' outcomes as `future_odds` rows: one per platform, market and outcome. A market whose fields
    are wrong is rejected whole, with the future it came from in the reason; a detail that is no object with a
    `markets` array is rejected whole."""
    empty = Normalized(pl.DataFrame(schema=FUTURE_ODDS.polars_schema), rejects_frame([], lineage.fetched_at))
    parts = [empty, *(_detail_odds(detail, lineage) for detail in details)]
    return Normalized(pl.concat([p.rows for p in parts]), pl.concat([p.rejects for p in parts]))


def _detail_odds(detail: Detail, lineage: Lineage) -> Normalized:
    record = detail.record
    markets = record.get("markets") if isinstance(record, dict) else None
    where = f"{detail.kind} {detail.asked_id}"
    if detail.problem is not None or not isinstance(markets, list):
        reason = f"{where}: {detail.problem or NO_MARKETS}"
        return Normalized(pl.DataFrame(schema=FUTURE_ODDS.polars_schema),
                          rejects_frame([(record, reason)], lineage.fetched_at))
    kept, frame, rejected = build(FUTURE_MARKET, markets)
    reasons = frame.select(value_reason(FUTURE_MARKET)).to_series()
    bad = reasons.is_not_null()
    rejected += zip((kept[i] for i in bad.arg_true()), reasons.filter(bad), strict=True)
    rejects = rejects_frame([(market, f"{where}: {reason}") for market, reason in rejected], lineage.fetched_at)
    return Normalized(_flattened(frame.filter(~bad), detail, lineage), rejects)


def _flattened(markets: pl.DataFrame, detail: Detail, lineage: Lineage) -> pl.DataFrame:
    """One row per market and outcome, in `future_odds`' columns."""
    outcomes = (markets.select("platform", "market_id", "outcomes").explode("outcomes")
                .filter(pl.col("outcomes").is_not_null()).unnest("outcomes"))
    odds = pl.col("odds").struct
    american = odds.field("american").str.strip_chars()
    spread = outcomes.with_columns(
        american_odds=pl.when(american.str.contains(r"^\d")).then("+" + american).otherwise(american),
        decimal_odds=odds.field("decimal"),
        implied_probability=odds.field("implied_probability"),
        kind=pl.lit(detail.kind), future_id=pl.lit(detail.asked_id),
    )
    given = lineage.columns()
    return spread.select(
        pl.col(c.name).cast(c.dtype) if c.name in spread.columns else pl.lit(given[c.name], dtype=c.dtype).alias(c.name)
        for c in FUTURE_ODDS.columns
    )
