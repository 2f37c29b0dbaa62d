"""Data-quality checks of one partition, in polars, derived from the schema.

Each check is a pure function of the partition's rows (and what the partition is: platform, day, the
markets it holds) returning a `CheckOutcome`; `repeats_agree` reads the partition's rejects instead. The
Dagster assets turn the registry below into `AssetCheckSpec`s and report the outcomes as
`AssetCheckResult`s of every materialisation (failed blocking checks as errors, the others as warnings).

A row of another platform is not checked for: the normalizers take `platform` and `date` from the call,
and the lake refuses to write a row of another partition (the step fails), so such a check could never
fail. `timestamps_inside_day` checks the rows as landed: the streamed tables (trades, price history) keep
only the day's rows (a market's first page brings later days' trades), so there it holds by construction.

The reconciliation checks (`Check.reconciles`, defined in pipeline.engine.reconciliation) hold what landed
against what the service says about itself (`PartitionContext.markets` and `.figures`): they run once the
partition is written (`reconcile`), and a failed one names what it concerns in its description and figures.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any

import polars as pl

from pipeline.engine.normalized import CONFLICTING_REPEAT
from pipeline.engine.reconciliation import PER_MARKET, landed_per_market, reconciliations, rows_kept
from pipeline.engine.schema import (
    IMPLIED_PROBABILITY_RELATIVE_TOLERANCE,
    OUTCOME_MAPS,
    OVERROUND_TOLERANCE,
    BookSide,
    Table,
    lake_tables,
)
from pipeline.engine.service_figures import ServiceFigures

PREVIEW_ROWS = 5
EXAMPLE_CHARS = 300  # of a rejected record's JSON, in an example
CONCERNED_SHOWN = 100  # ids a failed reconciliation names in its metadata
NAMED_IN_DESCRIPTION = 10  # of them, in its description (what `pmw status` prints)


@dataclass(frozen=True)
class PartitionContext:
    platform: str  # the partition's platform, or its league for the sports tables
    day: date
    market_ids: frozenset[str] = frozenset()  # ids of the markets partition, for reference checks
    team_ids: frozenset[str] = frozenset()  # router ids of the league's teams partition, for future_odds
    markets: pl.DataFrame | None = None  # the markets partition's rows, for the reconciliation checks
    figures: ServiceFigures | None = None  # what the service said about the partition's answers
    price_volume: pl.DataFrame | None = None  # the day's price-history volume per market, when landed (trades)
    replaced: tuple[int, int] | None = None  # the rows the partition held before this landing, and holds now


@dataclass(frozen=True)
class CheckOutcome:
    name: str
    passed: bool
    violations: int
    description: str
    examples: list[dict[str, Any]] = field(default_factory=list)
    blocking: bool = True  # the check's (`Check.blocking`)
    figures: dict[str, Any] = field(default_factory=dict)  # a reconciliation's: what it held against what


@dataclass(frozen=True)
class Check:
    name: str
    description: str
    run: Callable[[pl.DataFrame, PartitionContext], pl.DataFrame]  # returns the offending rows
    # A failure holds back the SQL models that read the table (directly or through other models) in the same
    # run; the partition itself lands, and the run's other tables too (pipeline.defs.sql_models.assets). Not
    # Dagster's blocking: that would fail the step and skip the partition's other tables. A check failing
    # means the data is wrong, and blocks; one that is not blocking is reported as a warning.
    blocking: bool = True
    reads_rejects: bool = False  # `run` is given the partition's rejects (REJECTS_SCHEMA) instead of its rows
    reconciles: bool = False  # run by `reconcile` on the landed partition; offending rows' first column names
    # what is concerned, and rows with an `excused` reason are named, not counted
    reads: tuple[str, ...] = ()  # other tables of the partition whose landed rows it reads (`Reconciliation.reads`)


def outcome(check: Check, df: pl.DataFrame, ctx: PartitionContext) -> CheckOutcome:
    """The check run on `df` (rows, or rejects when the check reads them), its first offending rows as examples."""
    bad = check.run(df, ctx)
    if check.reconciles:
        return _reconciled(check, bad)
    return CheckOutcome(check.name, bad.height == 0, bad.height, check.description,
                        bad.head(PREVIEW_ROWS).to_dicts(), check.blocking)


def _reconciled(check: Check, found: pl.DataFrame) -> CheckOutcome:
    """A reconciliation's outcome: what is concerned (the offending rows' first column) named in the figures and,
    when it failed, in the description; rows with an `excused` reason named apart, not counted."""
    excused = found.filter(pl.col("excused").is_not_null()) if "excused" in found.columns else found.clear()
    bad = found.filter(pl.col("excused").is_null()).drop("excused") if "excused" in found.columns else found
    concerned = bad.get_column(bad.columns[0]).cast(pl.String).to_list() if bad.width else []
    figures: dict[str, Any] = {"concerned": concerned[:CONCERNED_SHOWN]} if concerned else {}
    if not excused.is_empty():
        figures["excused"] = excused.head(CONCERNED_SHOWN).to_dicts()
    description = check.description
    if concerned:
        named = ", ".join(concerned[:NAMED_IN_DESCRIPTION]) + (", ..." if len(concerned) > NAMED_IN_DESCRIPTION else "")
        description = f"{description}. FAILED for {len(concerned)}: {named}"
    return CheckOutcome(check.name, bad.is_empty(), bad.height, description, bad.head(PREVIEW_ROWS).to_dicts(),
                        check.blocking, figures)


def _enum_check(column: str, allowed: tuple[str, ...]) -> Check:
    def run(df: pl.DataFrame, _ctx: PartitionContext) -> pl.DataFrame:
        wrong = pl.col(column).is_not_null() & ~pl.col(column).is_in(list(allowed))
        return df.filter(wrong).select(_key_columns(df, column))

    return Check(f"{column}_enum", f"`{column}` is one of {', '.join(allowed)}", run)


def _not_null_check(table: Table) -> Check:
    required = [c for c in table.required_columns]

    def run(df: pl.DataFrame, _ctx: PartitionContext) -> pl.DataFrame:
        missing = pl.concat_list([pl.when(pl.col(c).is_null()).then(pl.lit(c)) for c in required]).list.drop_nulls()
        return df.select(_key_columns(df), missing.alias("null_columns")).filter(
            pl.col("null_columns").list.len() > 0)

    return Check("required_not_null", "required columns have values: " + ", ".join(required), run)


def _unique_key_check(table: Table) -> Check:
    key = list(table.primary_key)

    def run(df: pl.DataFrame, _ctx: PartitionContext) -> pl.DataFrame:
        return df.group_by(key).len("copies").filter(pl.col("copies") > 1)

    return Check("unique_key", "one row per " + ", ".join(key), run)


def _price_check(prices: Callable[[], pl.Expr], columns: Callable[[], list[pl.Expr]] | None = None) -> Check:
    """`prices`: a row's prices as a list; `columns`: the same prices as columns, when they are (the rows holding a
    wrong one are then found first, and only theirs are made lists: a list per row costs more than the check)."""
    def wrong(price: pl.Expr) -> pl.Expr:
        return price.is_nan() | (price < 0) | (price > 1)

    def run(df: pl.DataFrame, _ctx: PartitionContext) -> pl.DataFrame:
        if columns is not None:
            df = df.filter(pl.any_horizontal(wrong(price) for price in columns()))
        values = df.select(_key_columns(df), prices().alias("price"))
        # Only the rows holding a wrong price are exploded: exploding every row copies its keys once per price.
        flagged = values.filter(pl.col("price").list.eval(wrong(pl.element())).list.any())
        return flagged.explode("price").filter(wrong(pl.col("price")))

    return Check("prices_in_unit_interval", "every price is a number within [0, 1]", run)


def _positive_size_check(why: str) -> Check:
    def run(df: pl.DataFrame, _ctx: PartitionContext) -> pl.DataFrame:
        return df.filter(pl.col("size").is_nan() | (pl.col("size") <= 0)).select(_key_columns(df, "size"))

    return Check("sizes_positive", f"every `size` is a number above 0 ({why})", run)


def _repeats_agree_check(table: Table) -> Check:
    def run(rejects: pl.DataFrame, _ctx: PartitionContext) -> pl.DataFrame:
        return rejects.filter(pl.col("reason") == CONFLICTING_REPEAT).select(
            pl.col("raw").str.slice(0, EXAMPLE_CHARS).alias("rejected_version"))

    # Not blocking: the row landed is a version the source gave; which one was right, the check cannot say.
    return Check("repeats_agree",
                 f"every {table.resource.lower()} the API sent more than once under one id (or key) came with the "
                 "same values each time (otherwise the version met first lands, the others are rejected with the "
                 "reason, and this warning is not blocking)", run, blocking=False, reads_rejects=True)


def _price_keys_check() -> Check:
    def run(df: pl.DataFrame, _ctx: PartitionContext) -> pl.DataFrame:
        ids = pl.col("outcomes").list.eval(pl.element().struct.field("id"))
        no_keys = pl.lit([], dtype=pl.List(pl.String()))
        keys = pl.concat_list([pl.col(c).list.eval(pl.element().struct.field("key")).fill_null(no_keys)
                               for c in OUTCOME_MAPS])
        stray = keys.list.set_difference(ids.fill_null(no_keys)).alias("stray_keys")
        return df.select(_key_columns(df), stray).filter(pl.col("stray_keys").list.len() > 0)

    maps = ", ".join(f"`{c}`" for c in OUTCOME_MAPS)
    return Check("price_keys_name_outcomes", f"every key of {maps} names an outcome of the market, by its id or "
                 "its name (a key naming neither is kept as sent, its price joined to no outcome)", run)


def _inside_day_check(column: str) -> Check:
    def run(df: pl.DataFrame, ctx: PartitionContext) -> pl.DataFrame:
        start = datetime.combine(ctx.day, datetime.min.time(), UTC)
        end = start + timedelta(days=1)
        return df.filter((pl.col(column) < start) | (pl.col(column) >= end)).select(_key_columns(df, column))

    return Check("timestamps_inside_day", f"`{column}` falls inside the partition's UTC day", run)


def _references_markets_check() -> Check:
    def run(df: pl.DataFrame, ctx: PartitionContext) -> pl.DataFrame:
        return df.filter(~pl.col("market_id").is_in(list(ctx.market_ids))).select(_key_columns(df))

    return Check("references_partition_markets", "every `market_id` is a market of the same partition", run)


def _levels_in_order_check() -> Check:
    def run(df: pl.DataFrame, _ctx: PartitionContext) -> pl.DataFrame:
        book = ["market_id", "snapshot_at", "outcome_side", "book_side"]
        previous = pl.col("price").shift(1).over(book, order_by="level")
        is_bid = pl.col("book_side") == BookSide.BID.value
        out_of_order = pl.when(is_bid).then(pl.col("price") >= previous).otherwise(pl.col("price") <= previous)
        return df.filter(out_of_order.fill_null(False)).select(
            *book, "level", "price", previous.alias("previous_level_price"))

    return Check("levels_in_price_order",
                 "each side of a book goes away from the best price level by level: bids strictly descending, "
                 "asks strictly ascending", run)


def _not_crossed_check() -> Check:
    def run(df: pl.DataFrame, _ctx: PartitionContext) -> pl.DataFrame:
        return df.filter(pl.col("best_bid") > pl.col("best_ask")).select(
            "market_id", "snapshot_at", "best_bid", "best_ask", "spread")

    return Check("book_not_crossed",
                 "a book's best bid is at most its best ask (a crossed book is landed as served, and reported)", run)


def _key_columns(df: pl.DataFrame, *shown: str) -> pl.Expr:
    """The columns that say which row an example is, then the `shown` ones, as one expression (a list of
    names given to `select` next to an expression would be read as a literal list, not as columns)."""
    keys = [c for c in ("id", "market_id", "snapshot_at", "trade_id", "outcome_id", "timestamp") if c in df.columns][:3]
    return pl.col([*keys, *(c for c in shown if c not in keys)])


# -- the odds of futures and awards ---------------------------------------------------------------------------


def _relative_gap(a: pl.Expr, b: pl.Expr) -> pl.Expr:
    """|a / b - 1|: how far two prices of one outcome disagree, as a share."""
    return (a / b - 1).abs()


def _american_as_decimal(american: pl.Expr) -> pl.Expr:
    """American odds (text: `+350`, `350`, `-200`) as decimal odds; null when the text is no such number.
    +A pays A on 100 staked (decimal 1 + A/100), -A stakes A to win 100 (decimal 1 + 100/A)."""
    number = american.str.strip_chars().str.strip_prefix("+").cast(pl.Float64, strict=False)
    return (pl.when(number >= 100).then(1 + number / 100)
            .when(number <= -100).then(1 + 100 / number.abs()))


def _implied_probability_check() -> Check:
    tolerance = IMPLIED_PROBABILITY_RELATIVE_TOLERANCE

    def run(df: pl.DataFrame, _ctx: PartitionContext) -> pl.DataFrame:
        p, decimal = pl.col("implied_probability"), pl.col("decimal_odds")
        wrong = p.is_nan() | (p < 0) | (p > 1) | ~(decimal > 1) | (_relative_gap(p * decimal, pl.lit(1.0)) > tolerance)
        return df.filter(wrong.fill_null(True)).select(_odds_key(), p, decimal)

    return Check("implied_probability_matches_decimal",
                 f"every implied probability is within [0, 1] and equals 1 / decimal odds within {tolerance:.0%} "
                 "(decimal odds above 1)", run)


def _american_check() -> Check:
    tolerance = IMPLIED_PROBABILITY_RELATIVE_TOLERANCE

    def run(df: pl.DataFrame, _ctx: PartitionContext) -> pl.DataFrame:
        from_american = _american_as_decimal(pl.col("american_odds"))
        wrong = _relative_gap(from_american, pl.col("decimal_odds")) > tolerance
        return df.filter(wrong.fill_null(True)).select(_odds_key(), pl.col("american_odds", "decimal_odds"))

    return Check("american_matches_decimal",
                 f"the American odds are a number of at least 100 either way (+A or A, -A) and give the decimal "
                 f"odds within {tolerance:.0%}", run)


def _team_of_league_check() -> Check:
    def run(df: pl.DataFrame, ctx: PartitionContext) -> pl.DataFrame:
        stray = pl.col("team_router_id").is_not_null() & ~pl.col("team_router_id").is_in(list(ctx.team_ids))
        return df.filter(stray).select(_odds_key(), pl.col("team_router_id"))

    return Check("team_of_the_league", "every outcome's `team_router_id` (when set) is a team of the league's "
                 "`teams` partition of the day", run)


def _field_covered_check() -> Check:
    floor = 1 - OVERROUND_TOLERANCE

    def run(df: pl.DataFrame, _ctx: PartitionContext) -> pl.DataFrame:
        sums = df.group_by("kind", "future_id", "platform", "market_id").agg(
            pl.col("implied_probability").sum().alias("probability_sum"), pl.len().alias("outcomes"))
        return sums.filter(pl.col("probability_sum") < floor).sort("kind", "future_id", "platform")

    # Not blocking: the prices there are still right, and the marts take margins out per platform.
    return Check("outcomes_cover_the_field",
                 f"per future (or award) and platform, the implied probabilities sum to at least {floor:g} "
                 "(1 plus the platform's margin when every outcome is listed); a sum below means outcomes that "
                 "matter are missing (a warning, not blocking)", run, blocking=False)


def _odds_key() -> pl.Expr:
    return pl.col("kind", "future_id", "platform", "outcome_name")


def _odds_checks() -> list[Check]:
    return [_implied_probability_check(), _american_check(), _team_of_league_check(), _field_covered_check()]


def checks_for(table: Table) -> tuple[Check, ...]:
    """The checks of a table: derived from its schema (required columns, key, enums, time column, market
    references, records listed by id), plus the price checks of the tables that hold prices, the size
    check of trades, and the table's reconciliations (pipeline.engine.reconciliation)."""
    checks = [_not_null_check(table), _unique_key_check(table)]
    checks += [_enum_check(f.name, f.enum) for f in table.fields if f.enum and f.name != table.partitioned_by]
    if table.name == "markets":
        checks.append(_price_check(lambda: pl.col("current_prices").list.eval(pl.element().struct.field("price"))))
        checks.append(_price_keys_check())
    if table.name in ("trades", "profile_trades"):
        checks.append(_price_check(lambda: pl.concat_list(pl.col("price")), lambda: [pl.col("price")]))
        checks.append(_positive_size_check("a trade of nothing, or of less, is no trade"))
    if table.name == "price_history":
        def candle() -> list[pl.Expr]:
            return [pl.col("price").struct.field(f) for f in ("open", "high", "low", "close")]

        checks.append(_price_check(lambda: pl.concat_list(candle()), candle))
    if table.name == "orderbook_levels":
        checks.append(_price_check(lambda: pl.concat_list(pl.col("price")), lambda: [pl.col("price")]))
        checks.append(_positive_size_check("a level with nothing resting at its price is no level"))
        checks.append(_levels_in_order_check())
    if table.name == "orderbook_snapshots":
        checks.append(_price_check(lambda: pl.concat_list(pl.col("best_bid"), pl.col("best_ask")).list.drop_nulls()))
        checks.append(_not_crossed_check())
    if table.name == "future_odds":
        checks += _odds_checks()
    if table.time_column is not None:
        checks.append(_inside_day_check(table.time_column))
    if "market_id" in table.column_names and table.references_markets:
        checks.append(_references_markets_check())
    if table.listed_by_id:
        checks.append(_repeats_agree_check(table))
    kept = () if table.rounds else (rows_kept(),)  # a table landed in rounds adds to its day, replaces nothing
    return tuple(checks) + tuple(Check(r.name, r.description, r.run, r.blocking, reconciles=True, reads=r.reads)
                                 for r in (*reconciliations(table.name), *kept))


CHECKS: dict[str, tuple[Check, ...]] = {name: checks_for(table) for name, table in lake_tables().items()}


def run_checks(table: str, df: pl.DataFrame, ctx: PartitionContext, rejects: pl.DataFrame) -> list[CheckOutcome]:
    """The outcome of each of the table's checks on a partition's rows and rejects (but the reconciliations)."""
    return [outcome(check, rejects if check.reads_rejects else df, ctx) for check in CHECKS[table]
            if not check.reconciles]


def reconcile(table: str, rows: pl.DataFrame, ctx: PartitionContext,
              per_market: pl.DataFrame | None = None) -> list[CheckOutcome]:
    """The outcome of each of the table's reconciliation checks on what landed, held against `ctx.markets` and
    `ctx.figures`: the partition's rows, or for the tables read per market what landed per market (`per_market`,
    as `landed_per_market` gives it; from `rows` when not given)."""
    if table in PER_MARKET:
        rows = per_market if per_market is not None else landed_per_market(rows)
    return [outcome(check, rows, ctx) for check in CHECKS[table] if check.reconciles]
