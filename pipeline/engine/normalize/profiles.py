"""Trader answers -> rows of `profiles` and `profile_trades`.

A profile answer (`/profile/info` with metrics) is read as `{data: {profile, metrics}}` with the exact JSON type
checks of `frames`: one row per watched trader, or a reject with the reason (a trader the API does not know,
a field of the wrong type). A trader's trades are Trade resources, read by the unified normalizer as `trades`
rows; those of the day are kept, each under the trader asked for (the `trader` column: rows belong to what the
pipeline asked for), and the versions of a trade that paging met again with other values are rejects.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from typing import Any

import polars as pl

from pipeline.engine.normalize.answers import unwrap
from pipeline.engine.normalize.native_frames import iso_text, number, read, struct, text
from pipeline.engine.normalize.rows import rejects_frame, rows, value_reason
from pipeline.engine.normalize.unified import normalize
from pipeline.engine.normalized import CONFLICTING_REPEAT, Normalized
from pipeline.engine.raw_pages import ProfileAnswer
from pipeline.engine.schema import PROFILE_TRADES, PROFILES

_PROFILE = ("user_id", "display_name", "profile_image", "description")
_COUNTS = ("follower_count", "following_count", "profile_view_count")
_METRICS = ("volume", "pnl", "roi", "num_markets_traded", "portfolio_value", "open_interest")
PROFILE_ANSWER = (
    struct("profile", *(text(name) for name in _PROFILE), iso_text("joined_at"), *(number(n) for n in _COUNTS),
           required=True),
    struct("metrics", *(number(name) for name in _METRICS)),
)
_REASON = "_reason"


def normalize_profiles(answers: list[ProfileAnswer], platform: str, day: date, source: str) -> Normalized:
    """One row per trader whose answer holds a profile; the other answers are rejects with the reason."""
    held, no_data = unwrap(answers, "profile")
    answer_of = {id(data): a for a, data in held}
    native = read(PROFILE_ANSWER, [data for _, data in held])
    kept = [answer_of[id(record)] for record in native.kept]
    frame = native.frame.with_columns(
        pl.Series("trader", [a.trader for a in kept], pl.String),
        pl.Series("_fetched_at", [a.fetched_at for a in kept], pl.Datetime("us", "UTC")),
        value_reason(native.fields).alias(_REASON),
    )
    bad = frame[_REASON].is_not_null()
    rejected = [*native.rejected, *no_data,
                *zip((native.kept[i] for i in bad.arg_true()), frame.filter(bad)[_REASON], strict=True)]
    profile, metrics = pl.col("profile"), pl.col("metrics")
    columns = frame.filter(~bad).select(
        "trader",
        pl.lit(platform).alias("platform"),
        *(profile.struct.field(name) for name in (*_PROFILE, "joined_at", *_COUNTS)),
        *(metrics.struct.field(name) for name in _METRICS),
        "_fetched_at",
    )
    lineage = {"platform": platform, "date": day, "_source": source}
    landed = rows(PROFILES, columns, lineage).with_columns(columns["_fetched_at"])
    fetched = max((a.fetched_at for a in answers), default=datetime.now(UTC))
    return Normalized(landed, rejects_frame(rejected, fetched))


def normalize_trader_trades(records: list[dict[str, Any]], conflicting: list[Any], trader: str, platform: str,
                            day: date, source: str, fetched_at: datetime) -> Normalized:
    """The trader's trades of the day as `profile_trades` rows (the other days' are left for their partitions)."""
    read_trades = normalize("trades", records, platform=platform, day=day, source=source, fetched_at=fetched_at)
    start = datetime.combine(day, time(), UTC)
    of_the_day = read_trades.rows.filter(pl.col("timestamp").is_between(start, start + timedelta(days=1),
                                                                        closed="left"))
    landed = of_the_day.with_columns(pl.lit(trader).alias("trader")).select(PROFILE_TRADES.column_names)
    repeats = rejects_frame([(item, CONFLICTING_REPEAT) for item in conflicting], fetched_at)
    return Normalized(landed, pl.concat([read_trades.rejects, repeats]))
