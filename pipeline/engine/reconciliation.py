"""The reconciliation checks: what a partition landed held against what the service says about itself.

A reconciliation is a check (`pipeline.engine.checks`, where the registry holds them with the others, marked
`Check.reconciles`) whose evidence is not the rows alone: `PartitionContext.markets`, the partition's markets (their
records' `last_trades`, `volume_24h`, `last_synced_at`, `event_id`, `series_id`), and `PartitionContext.figures`, the
`ServiceFigures` of the answers behind it (lists' `pagination.total`, price history's `meta.total_points` and
`time_range`, the catalogue's markets per event), and for trades `PartitionContext.price_volume`, the day's price
history as landed. Each returns the offending rows, the first column naming what is
concerned (a market, an event, a list, an answer); rows with an `excused` reason are named, not counted. They run
once the partition is written, on its rows or, for the tables read per market, on what landed per market
(`LANDED_SCHEMA`), and cost no request. Without evidence (a platform's own API, which reports no such figures) they
pass.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import TYPE_CHECKING

import polars as pl

if TYPE_CHECKING:
    from pipeline.engine.checks import PartitionContext

MVE_PREFIX = "KXMVE"  # Kalshi's multivariate (parlay) events and markets, which the unified API filters out
VOLUME_TOLERANCE = (0.01, 0.001)  # landed notional may fall short of volume_24h by 1 cent plus 0.1% (rounding)
# What a streamed partition landed, per market: the reconciliation checks of trades and price history read it.
LANDED_SCHEMA = {"market_id": pl.String(), "rows": pl.UInt32(), "size": pl.Float64(), "notional": pl.Float64()}
PER_MARKET = ("trades", "price_history")  # tables whose reconciliations read what landed per market
# The day's price-history volume per market (`PartitionContext.price_volume`): points of the day whose volume is above
# 0 say their market traded then.
PRICE_VOLUME_SCHEMA = {"market_id": pl.String(), "volume": pl.Float64()}


@dataclass(frozen=True)
class Reconciliation:
    """A reconciliation check, as `checks_for` registers it (a `Check` with `reconciles` set)."""

    name: str
    description: str
    run: Callable[[pl.DataFrame, PartitionContext], pl.DataFrame]  # returns the offending rows
    blocking: bool = True  # what `Check.blocking` says: a failure says rows are missing
    # Other tables of the partition whose landed rows it reads: their assets run first in a run that lands both
    # (the check spec's `additional_deps`), whatever order the steps would otherwise take.
    reads: tuple[str, ...] = ()


def _day_end(day: date) -> datetime:
    return datetime.combine(day + timedelta(days=1), datetime.min.time(), UTC)


def _members_landed_check(table: str, column: str) -> Reconciliation:
    def run(df: pl.DataFrame, ctx: PartitionContext) -> pl.DataFrame:
        if ctx.markets is None:
            return pl.DataFrame(schema={"market_id": pl.String(), column: pl.String()})
        landed = pl.concat([df["id"], df["platform_id"], *([df["slug"]] if table == "series" else [])]).drop_nulls()
        missing = pl.col(column).is_not_null() & ~pl.col(column).is_in(landed.implode())
        return ctx.markets.filter(missing).select(pl.col("id").alias("market_id"), column)

    by = "its `id`, else its `platform_id`" + (", else its `slug` (Polymarket's `seriesSlug`)" if table == "series"
                                                else "")
    return Reconciliation(f"markets_{table}_landed", f"every `{column}` of the partition's markets names a landed "
                          f"{table} record ({by})", run)


def _market_count_check() -> Reconciliation:
    def run(df: pl.DataFrame, ctx: PartitionContext) -> pl.DataFrame:
        schema = {"event_id": pl.String(), "market_count": pl.Float64(), "listed": pl.Int64(), "excused": pl.String()}
        listed = ctx.figures.listed_per_event if ctx.figures is not None else None
        if listed is None:
            return pl.DataFrame(schema=schema)
        by = {key: listed.rename({"event_id": key, "listed": f"by_{key}"}) for key in ("id", "platform_id")}
        events = (df.select("id", "platform_id", "market_count").filter(pl.col("market_count").is_not_null())
                  .join(by["id"], on="id", how="left").join(by["platform_id"], on="platform_id", how="left"))
        other_key = pl.col("platform_id").is_not_null() & (pl.col("platform_id") != pl.col("id"))
        by_other = pl.when(other_key).then(pl.col("by_platform_id").fill_null(0)).otherwise(0)
        count = pl.col("by_id").fill_null(0) + by_other
        mve = pl.any_horizontal(pl.col(c).str.starts_with(MVE_PREFIX).fill_null(False) for c in ("id", "platform_id"))
        placeholder = (pl.col("market_count") < 0) | (pl.col("market_count") != pl.col("market_count").floor())
        excused = (pl.when(mve).then(pl.lit("multivariate (MVE): its markets are filtered out of the listing"))
                   .when(placeholder).then(pl.lit("placeholder: market_count is no count")))
        return events.select(pl.col("id").alias("event_id"), "market_count", count.alias("listed"),
                             excused.alias("excused")).filter(pl.col("market_count") > pl.col("listed"))

    return Reconciliation("market_count_listed", "every event's `market_count` is at most the markets the catalogue "
                          "listing gave for it (by its `id` or `platform_id`; multivariate events and placeholder "
                          "counts are named, not counted)", run)


def _listing_check(table: str, which: str) -> Reconciliation:
    def run(_df: pl.DataFrame, ctx: PartitionContext) -> pl.DataFrame:
        walks = ctx.figures.lists if ctx.figures is not None else {}
        short = [(key, walked.totals[0], walked.listed) for key, walked in walks.items()
                 if walked.ended_by_server and len(walked.totals) == 1 and walked.listed < walked.totals[0]]
        return pl.DataFrame({
            "list": [f"GET /{key}" + ("" if "?" in key else f"?platform={ctx.platform}") for key, _, _ in short],
            "total": [total for _, total, _ in short], "listed": [listed for _, _, listed in short],
        }, schema={"list": pl.String(), "total": pl.Int64(), "listed": pl.Int64()})

    return Reconciliation(f"{table}_listing_complete", f"{which} brought as many items as its `pagination.total` "
                          "said, where every page gave the same total and the server itself ended the list", run)


def _traded_landed_check() -> Reconciliation:
    def run(df: pl.DataFrame, ctx: PartitionContext) -> pl.DataFrame:
        shown = {"market_id": pl.String(), "last_trade_in_day": pl.Datetime("us", "UTC"), "volume_24h": pl.Float64(),
                 "last_synced_at": pl.Datetime("us", "UTC"), "price_volume": pl.Float64()}
        if ctx.markets is None:
            return pl.DataFrame(schema=shown)
        start, end = _day_end(ctx.day) - timedelta(days=1), _day_end(ctx.day)
        in_day = (pl.col("last_trades").list.eval(pl.element().struct.field("timestamp"))
                  .list.eval(pl.element().filter((pl.element() >= start) & (pl.element() < end))).list.max())
        volume = pl.coalesce("volume_24h", "volume_24h_contracts")
        priced = ctx.price_volume if ctx.price_volume is not None else pl.DataFrame(schema=PRICE_VOLUME_SCHEMA)
        traded = (in_day.is_not_null() | ((volume > 0) & (pl.col("last_synced_at") == end)).fill_null(False)
                  | (pl.col("price_volume") > 0).fill_null(False))
        landed = df.filter(pl.col("rows") > 0).get_column("market_id")
        markets = ctx.markets.join(priced.rename({"market_id": "id", "volume": "price_volume"}), on="id", how="left")
        return markets.filter(traded & ~pl.col("id").is_in(landed.implode())).select(
            pl.col("id").alias("market_id"), in_day.alias("last_trade_in_day"), volume.alias("volume_24h"),
            "last_synced_at", "price_volume")

    return Reconciliation("traded_markets_have_trades", "every market that traded on the day by its record (a "
                          "`last_trades` time inside it, or `volume_24h` above 0 on a record synced exactly at the "
                          "day's end) or by the day's price history landed (volume above 0) has trades landed", run,
                          reads=("price_history",))


def _notional_check() -> Reconciliation:
    cents, share = VOLUME_TOLERANCE

    def run(df: pl.DataFrame, ctx: PartitionContext) -> pl.DataFrame:
        shown = {"market_id": pl.String(), "volume_24h": pl.Float64(), "unit": pl.String(),
                 "landed": pl.Float64(), "shortfall": pl.Float64()}
        if ctx.markets is None:
            return pl.DataFrame(schema=shown)
        money = pl.col("volume_24h").is_not_null()
        volume = pl.coalesce("volume_24h", "volume_24h_contracts")
        landed = pl.when(money).then(pl.col("notional")).otherwise(pl.col("size")).fill_null(0.0)
        whole_day = ctx.markets.filter((pl.col("last_synced_at") == _day_end(ctx.day)) & volume.is_not_null())
        return whole_day.join(df, left_on="id", right_on="market_id", how="left").select(
            pl.col("id").alias("market_id"), volume.alias("volume_24h"),
            pl.when(money).then(pl.lit("notional")).otherwise(pl.lit("contracts")).alias("unit"),
            landed.alias("landed"), (volume - landed).alias("shortfall"),
        ).filter(pl.col("shortfall") > cents + share * pl.col("volume_24h"))

    return Reconciliation("volume_matches_trades", "on a record synced exactly at the day's end (its 24 hours are "
                          "the day), the trades landed add up to `volume_24h` (sum of price x size, in the platform's "
                          f"currency; contracts for `volume_24h_contracts`) within {cents} plus {share:.1%}", run)


def _price_answers_check() -> Reconciliation:
    def run(df: pl.DataFrame, ctx: PartitionContext) -> pl.DataFrame:
        answers = ctx.figures.price_answers if ctx.figures is not None else []
        frame = pl.DataFrame({
            "market_ids": [list(a.markets) for a in answers], "start": [a.start for a in answers],
            "end": [a.end for a in answers], "points": [a.points for a in answers],
            "total_points": [a.total_points for a in answers], "range_start": [a.range_start for a in answers],
            "range_end": [a.range_end for a in answers]},
            schema={"market_ids": pl.List(pl.String()), "start": pl.Int64(), "end": pl.Int64(), "points": pl.Int64(),
                    "total_points": pl.Int64(), "range_start": pl.Int64(), "range_end": pl.Int64()})
        # `meta.time_range` is shown, not judged: the spec does not say whether it echoes the span asked or gives the
        # span of the points held (sandbox reading `price_time_range`), and the second says nothing of what is missing.
        short = (pl.col("total_points") > pl.col("points")).fill_null(False)
        landed = frame.with_row_index("answer").explode("market_ids").join(
            df.select("market_id", "rows"), left_on="market_ids", right_on="market_id", how="left",
        ).group_by("answer").agg(pl.col("rows").sum().alias("landed_in_day"))
        return frame.with_row_index("answer").filter(short).join(landed, on="answer", how="left").select(
            pl.col("market_ids").list.join(","), pl.exclude("answer", "market_ids"))

    return Reconciliation("price_points_answered", "every price-history answer held the points its "
                          "`meta.total_points` counted (its `meta.time_range` shown beside)", run)


def _platform_errors_check() -> Reconciliation:
    def run(_df: pl.DataFrame, ctx: PartitionContext) -> pl.DataFrame:
        errors = (ctx.figures.platform_errors if ctx.figures is not None else None) or {}
        return pl.DataFrame({"platform": list(errors), "error": list(errors.values())},
                            schema={"platform": pl.String(), "error": pl.String()})

    # Not blocking: the rows landed are right; a platform the service could not reach may be missing from them.
    return Reconciliation("no_platform_errors", "the answers' `meta.platform_errors` is empty (otherwise the platforms "
                          "named there may be missing from the partition: a warning, not blocking)", run,
                          blocking=False)


def reconciliations(table: str) -> tuple[Reconciliation, ...]:
    """The reconciliation checks of a table of the ingestion assets, and the sports tables' platform errors."""
    listing = _listing_check(table, f"the `{table}` listing")
    return {
        "markets": (listing,),
        "events": (_members_landed_check("events", "event_id"), _market_count_check(), listing),
        "series": (_members_landed_check("series", "series_id"), listing),
        "trades": (_traded_landed_check(), _notional_check(),
                   _listing_check("trades", "each market's `/trades` listing read to its end")),
        "price_history": (_price_answers_check(),),
        **{sports: (_platform_errors_check(),) for sports in ("futures", "awards", "future_odds")},
    }.get(table, ())


def rows_kept() -> Reconciliation:
    """A rerun that landed fewer rows than the partition held, within PMW_SHRINK_TOLERANCE (past it the lake refuses
    the rerun: pipeline.engine.lake.replacement), or beyond it on purpose (`--allow-shrink`): a warning naming the
    rows before and after."""
    def run(_df: pl.DataFrame, ctx: PartitionContext) -> pl.DataFrame:
        schema = {"partition": pl.String(), "rows_before": pl.Int64(), "rows_after": pl.Int64(),
                  "change": pl.String()}
        before, after = ctx.replaced or (0, 0)
        if after >= before:
            return pl.DataFrame(schema=schema)
        change = shrink_percent(before, after)
        return pl.DataFrame({"partition": [f"{ctx.platform} {ctx.day}: {before} -> {after} rows ({change})"],
                             "rows_before": [before], "rows_after": [after], "change": [change]}, schema=schema)

    # Not blocking: the rows landed are what the source holds now; fewer than before is a finding to look at.
    return Reconciliation("rows_kept", "a rerun lands at least the rows the partition held (fewer, within "
                          "PMW_SHRINK_TOLERANCE or with --allow-shrink, is a warning naming the rows before and "
                          "after)", run, blocking=False)


def shrink_percent(before: int, rows: int) -> str:
    """How much a partition of `before` rows changed to `rows`, as the messages say it: "-46.0 %"."""
    return f"{(rows - before) / before:+.1%}".replace("%", " %")


def price_volume(batches: Iterable[pl.DataFrame]) -> pl.DataFrame:
    """The volume of a price-history partition's points per market (`PRICE_VOLUME_SCHEMA`), a batch at a time."""
    per_batch = [batch.group_by("market_id").agg(pl.col("volume").sum()) for batch in batches]
    return pl.concat([pl.DataFrame(schema=PRICE_VOLUME_SCHEMA), *per_batch]).group_by("market_id").agg(
        pl.col("volume").sum())


def landed_per_market(rows: pl.DataFrame) -> pl.DataFrame:
    """Rows, and for trades size and notional (price x size), per market (`LANDED_SCHEMA`); summed over batches
    again, it is the partition's."""
    traded = "size" in rows.columns
    size = pl.col("size").sum() if traded else pl.lit(None, pl.Float64()).alias("size")
    notional = (pl.col("price") * pl.col("size")).sum() if traded else pl.lit(None, pl.Float64())
    return rows.group_by("market_id").agg(pl.len().alias("rows"), size, notional.alias("notional")).cast(LANDED_SCHEMA)
