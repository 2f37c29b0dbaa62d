"""Gamma's markets (Polymarket's own `/markets`, and the markets `/events` nests) -> rows of `markets`.

What the fields mean, not only their types (issues 22, 34): a closed market is never paused; `[\"0\", \"0\"]`
prices are placeholders; the price is the one Polymarket displays (the last trade when the spread is wider than
10 cents, an empty side of the book counted as Gamma's `spread` counts it); a closed market's trading ended at
`closedTime` (before or after `endDate`); the category comes from the event's tags when Gamma leaves `category`
empty; the exact decimal strings `volume` and `liquidity` beat their float twins; `gameStartTime` is a start only
on a game; a market without `startDate` opened with its event, else when created; an unnamed negative-risk leg is
a `placeholder`, not counted in its event's `market_count`.

Grouping: every Gamma market is a market of its own, also inside a negative-risk event (`negRisk`): its
tokens are its outcomes, and `event_id` groups it with its siblings. No categorical market is built out of
a negative-risk event, because its members keep their own ids, trades and prices.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import orjson
import polars as pl

from pipeline.engine.normalize.mappings import (
    POLYMARKET_CATEGORIES,
    POLYMARKET_STATUS_RULES,
    POLYMARKET_WIDE_SPREAD,
    StatusRule,
)
from pipeline.engine.normalize.native_frames import (
    Native,
    decimal,
    finish,
    flag,
    iso_text,
    number,
    objects,
    read,
    struct,
    text,
)
from pipeline.engine.normalize.rows import book_quote, quoted
from pipeline.engine.normalize.wire_frame import shown
from pipeline.engine.normalized import Normalized
from pipeline.engine.schema import TABLES, MarketType
from pipeline.engine.wire_times import parse_iso

_MARKETS = TABLES["markets"].polars_schema

# The parent event a Gamma market nests (`events[0]`), with the series and tags an event may nest.
SERIES_REFERENCE = objects("series", text("id"))
TAGS = objects("tags", text("label"))
_PARENT_EVENT = objects("events", text("id"), text("title"), text("slug"), text("category"), iso_text("startDate"),
                        SERIES_REFERENCE, text("seriesSlug"), TAGS)

MARKET_FIELDS = (
    text("id", required=True),
    text("question", required=True),
    text("conditionId", required=True),
    text("outcomes", required=True),
    flag("active", required=True),
    flag("closed", required=True),
    text("slug"),
    text("description"),
    text("category"),
    text("outcomePrices"),
    text("clobTokenIds"),
    flag("acceptingOrders"),
    text("umaResolutionStatus"),
    text("marketType"),
    number("volumeNum"),
    text("volume"),
    number("liquidityNum"),
    text("liquidity"),
    number("volume24hr"),
    number("volume1wk"),
    number("competitive"),
    number("bestBid"),
    number("bestAsk"),
    number("spread"),
    text("image"),
    text("resolutionSource"),
    iso_text("createdAt"),
    iso_text("startDate"),
    iso_text("endDate"),
    text("closedTime"),  # "2026-05-09 02:07:01+00": a space for the T, read by _spaced_time
    text("groupItemTitle"),
    text("lowerBound"),
    text("upperBound"),
    number("lastTradePrice"),
    flag("negRisk"),
    text("negRiskMarketID"),
    struct("feeSchedule", number("rate")),
    text("feeType"),
    iso_text("eventStartTime"),
    text("gameStartTime"),  # "2026-05-08 20:00:00+00", like closedTime
    text("sportsMarketType"),
    text("gameId"),  # a string; a number is read as its text (_numbers_as_text)
    _PARENT_EVENT,
)


class _Outcomes(NamedTuple):
    """What a Gamma market's three JSON-in-string arrays give, or the problem that stops reading them."""

    outcomes: list[dict[str, str]] | None = None
    current_prices: list[dict[str, Any]] | None = None
    token_ids: list[str] | None = None
    prices: list[float] | None = None
    problem: str | None = None


def read_markets(records: list[Any], lineage: dict[str, Any]) -> Normalized:
    native = _with_outcomes(_with_book(read(MARKET_FIELDS, _numbers_as_text(records))))
    event = pl.col("events").list.first().struct
    volume, volume_problem = decimal(pl.col("volume"), "volume")
    liquidity, liquidity_problem = decimal(pl.col("liquidity"), "liquidity")
    lower, lower_problem = decimal(pl.col("lower_bound"), "lowerBound")
    upper, upper_problem = decimal(pl.col("upper_bound"), "upperBound")
    game = non_empty(pl.col("sports_market_type")).is_not_null() | non_empty(pl.col("game_id")).is_not_null()
    closed_time, game_start = _spaced_time(pl.col("closed_time")), _spaced_time(pl.col("game_start_time"))
    end = parse_iso(pl.col("end_date"))
    flags = _status_flags()
    reports_volume = pl.col("volume").is_not_null() | pl.col("volume_num").is_not_null()
    columns = {
        "id": pl.col("id"),
        "platform_id": pl.col("condition_id"),
        "event_id": event.field("id"),
        "event_name": event.field("title"),
        "event_slug": event.field("slug"),
        "series_id": series_id(event.field("series"), event.field("series_slug")),
        "slug": pl.col("slug"),
        "market_slug": pl.col("slug"),
        "title": pl.col("question"),
        "description": pl.col("description"),
        "category": pl.coalesce(
            non_empty(pl.col("category")),
            non_empty(event.field("category")),
            category(event.field("tags").list.eval(pl.element().struct.field("label"))),
            pl.when(non_empty(pl.col("sports_market_type")).is_not_null()).then(pl.lit("Sports")),
        ),
        "tags": event.field("tags").list.eval(pl.element().struct.field("label")),
        "status": _status(POLYMARKET_STATUS_RULES, flags),
        "market_type": _market_type(),
        "outcomes": pl.col("_outcomes"),
        "current_prices": pl.col("_current_prices"),
        "volume_24h": pl.coalesce(pl.col("volume24hr"), pl.when(reports_volume).then(0.0)),
        "volume_7d": pl.coalesce(pl.col("volume1wk"), pl.when(reports_volume).then(0.0)),
        "volume_total": pl.coalesce(volume, pl.col("volume_num")),
        "liquidity": pl.coalesce(liquidity, pl.col("liquidity_num")),
        "fee_rate": pl.col("fee_schedule").struct.field("rate"),
        "resolution_source": pl.col("resolution_source"),
        "image_url": pl.col("image"),
        "created_at": parse_iso(pl.col("created_at")),
        "trading_start_at": pl.coalesce(
            parse_iso(pl.col("start_date")), parse_iso(event.field("start_date")), parse_iso(pl.col("created_at"))
        ),
        "trading_end_at": pl.when(flags["closed"]).then(pl.coalesce(closed_time, end)).otherwise(end),
        "resolution_date": end,
        "resolved_at": pl.when(flags["closed"]).then(closed_time),
        "metadata": pl.struct(
            condition_id=pl.col("condition_id"),
            amm_type=pl.lit(None, pl.String),
            market_type=pl.col("market_type"),
            format_type=pl.lit(None, pl.String),
            competitive=pl.col("competitive"),
            score=pl.lit(None, pl.Float64),
            best_bid=pl.col("best_bid"),
            best_ask=pl.col("best_ask"),
            spread=pl.col("spread"),
            clob_token_ids=pl.col("_token_ids"),
        ),
        "outcome_label": pl.col("group_item_title"),
        "lower_bound": lower,
        "upper_bound": upper,
        "last_trade_price": pl.col("_last_trade"),
        "mutually_exclusive": pl.col("neg_risk"),
        "neg_risk_market_id": pl.col("neg_risk_market_id"),
        "fee_type": pl.col("fee_type"),
        "event_start_at": pl.coalesce(parse_iso(pl.col("event_start_time")), pl.when(game).then(game_start)),
        "settlement_value": pl.when(flags["closed"] & flags["settled"] & _is_payout()).then(
            pl.col("_prices").list.first()
        ),
        "placeholder": _placeholder(volume),
    }
    problems = [
        pl.col("_outcomes_problem"),
        _outcome_count_problem(),
        volume_problem,
        liquidity_problem,
        lower_problem,
        upper_problem,
        _time_problem("closedTime", pl.col("closed_time"), closed_time),
        _time_problem("gameStartTime", pl.when(game).then(pl.col("game_start_time")), game_start),
    ]
    return finish(TABLES["markets"], native, columns, problems, lineage)


def series_id(series: pl.Expr, slug: pl.Expr) -> pl.Expr:
    """The event's series: the id of the series it nests, else its `seriesSlug` (Gamma leaves the `series` array
    out of the event a market nests; the slug names the same series, and the series are looked up by it)."""
    return pl.coalesce(series.list.first().struct.field("id"), non_empty(slug))


def non_empty(value: pl.Expr) -> pl.Expr:
    """A text value, null when empty (Gamma's "no value")."""
    return pl.when(value != "").then(value)


def category(labels: pl.Expr) -> pl.Expr:
    """The first of Polymarket's top-level categories (mappings.POLYMARKET_CATEGORIES) among tag labels."""
    lowered = labels.list.eval(pl.element().str.to_lowercase())
    found: pl.Expr = pl.lit(None, pl.String)
    for category in reversed(POLYMARKET_CATEGORIES):
        found = pl.when(lowered.list.contains(category.lower())).then(pl.lit(category)).otherwise(found)
    return found


_AS_TEXT = ("lowerBound", "upperBound", "gameId")


def _numbers_as_text(records: list[Any]) -> list[Any]:
    """The markets with a scalar's bounds as decimal strings and the game's id as text, Gamma's way of writing
    them; one sent as a JSON number is the same value, read as its text rather than rejecting the market (not a
    hot path: markets)."""
    def as_text(record: Any) -> Any:
        if not isinstance(record, dict):
            return record
        numbers = {k: str(record[k]) for k in _AS_TEXT if type(record.get(k)) in (int, float)}
        return {**record, **numbers} if numbers else record

    return list(map(as_text, records))


def _with_book(native: Native) -> Native:
    """The best bid and ask as quotes (a dead book's `bestBid` 0 and `bestAsk` 1 are no orders: null; a closed
    market's are the book as it stood at the close, no price anyone can trade at: null too), the spread only when
    both sides are quoted, and the last trade's price (0, never traded, is none).

    `_book_spread` is the spread that decides the price Polymarket displays: Gamma's `spread`, which counts an
    empty side as a bid of 0 or an ask of 1 (no bid against an ask of 0.001: 0.001), else the same difference
    of the quotes."""
    trading = ~pl.col("closed").fill_null(False)
    bid, ask = (pl.when(trading).then(book_quote(pl.col(side))) for side in ("best_bid", "best_ask"))
    quoted = native.frame.select(bid.alias("best_bid"), ask.alias("best_ask"),
                                 pl.when(bid.is_not_null() & ask.is_not_null()).then(pl.col("spread")).alias("spread"),
                                 pl.coalesce(pl.col("spread"), ask.fill_null(1.0) - bid.fill_null(0.0))
                                 .alias("_book_spread"),
                                 book_quote(pl.col("last_trade_price")).alias("_last_trade"))
    return native.with_columns(*quoted)


def _with_outcomes(native: Native) -> Native:
    """The market frame with the outcomes, prices and token ids read out of Gamma's JSON-in-string arrays.

    Python reads them, one market at a time, because only a JSON parser can (polars' `json_decode` fails the
    whole column on one bad text). Markets are a few thousand a day: this is not a hot path.
    """
    read_out = list(
        map(
            _read_outcomes,
            native.values("outcomes"),
            native.values("outcomePrices"),
            native.values("clobTokenIds"),
            native.frame.select(pl.struct("best_bid", "best_ask", "_book_spread", "_last_trade", "closed"))
            .to_series().to_list(),
        )
    )
    return native.with_columns(
        pl.Series("_outcomes", [r.outcomes for r in read_out], dtype=_MARKETS["outcomes"]),
        pl.Series("_current_prices", [r.current_prices for r in read_out], dtype=_MARKETS["current_prices"]),
        pl.Series("_token_ids", [r.token_ids for r in read_out], dtype=pl.List(pl.String())),
        pl.Series("_prices", [r.prices for r in read_out], dtype=pl.List(pl.Float64())),
        pl.Series("_outcomes_problem", [r.problem for r in read_out], dtype=pl.String()),
    )


def _read_outcomes(
    names_text: str | None, prices_text: str | None, tokens_text: str | None, book: dict[str, Any]
) -> _Outcomes:
    """Outcome i is named `outcomes[i]`, has the id `clobTokenIds[i]` (its CLOB token; its name when the market
    has no tokens) and the price `outcomePrices[i]`, as Polymarket displays it (_shown). `book` holds the first
    outcome's best bid and ask, its book's spread, its last trade's price and whether the market is closed."""
    names, problem = _string_array(names_text, "outcomes")
    tokens, token_problem = _string_array(tokens_text, "clobTokenIds")
    texts, price_problem = _string_array(prices_text, "outcomePrices")
    problem = problem or token_problem or price_problem
    if problem or names is None:
        return _Outcomes(problem=problem)
    ids = names if tokens is None else tokens
    prices = None if texts is None else [_decimal(t) for t in texts]
    problem = _length_problem("clobTokenIds", ids, names) or _length_problem("outcomePrices", prices, names)
    if problem:
        return _Outcomes(problem=problem)
    if prices is not None and None in prices:
        return _Outcomes(problem=f"field 'outcomePrices': not an array of decimal numbers: {shown(prices_text)}")
    outcomes = [{"id": i, "name": n} for i, n in zip(ids, names, strict=True)]
    shown_prices = _shown(prices, book)
    entries = [{"key": i, "price": p, "bid": None, "ask": None} for i, p in zip(ids, shown_prices, strict=False)]
    if entries:
        entries[0].update(bid=book["best_bid"], ask=book["best_ask"])
    return _Outcomes(outcomes, entries, tokens, prices)


def _shown(prices: list[float] | None, book: dict[str, Any]) -> list[float]:
    """The prices Polymarket displays (docs.polymarket.com: the midpoint of the book, unless the spread is wider
    than 10 cents, then the last trade's price). Gamma's `outcomePrices` are the book's midpoints; the last trade
    replaces them when the first outcome's spread (`_book_spread`: an empty side is a bid of 0 or an ask of 1, as
    Gamma counts it) is over 10 cents, on a market still trading. Prices all 0 are Gamma's placeholders on legacy
    closed markets: none."""
    if not prices or not any(prices):
        return []
    spread, last = book["_book_spread"], book["_last_trade"]
    narrow = spread <= POLYMARKET_WIDE_SPREAD + 1e-9
    if book["closed"] or last is None or narrow:
        return prices
    others = [round(1 - last, 9)] if len(prices) == 2 else prices[1:]
    return [last, *others]


def _string_array(value: str | None, wire: str) -> tuple[list[str] | None, str | None]:
    """A JSON array of strings written inside a string (`"[\\"Yes\\", \\"No\\"]"`), or why the text is none."""
    if value is None:
        return None, None
    try:
        parsed = orjson.loads(value)
    except orjson.JSONDecodeError:
        parsed = None
    if type(parsed) is not list or not all(type(item) is str for item in parsed):
        return None, f"field '{wire}': not a JSON array of strings: {shown(value)}"
    return parsed, None


def _decimal(value: str) -> float | None:
    try:
        return float(value)
    except ValueError:
        return None


def _length_problem(wire: str, values: list[Any] | None, names: list[str]) -> str | None:
    if values is None or len(values) == len(names):
        return None
    return f"field '{wire}': {len(values)} item(s) for {len(names)} outcomes"


def _outcome_count_problem() -> pl.Expr:
    count = pl.col("_outcomes").list.len()
    return pl.when(count < 2).then(
        pl.concat_str([pl.lit("field 'outcomes': a market has 2 or more outcomes, got "), count.cast(pl.String)])
    )


def _market_type() -> pl.Expr:
    """Scalar when Gamma says so (`marketType`), else binary for 2 outcomes and categorical for more."""
    count = pl.col("_outcomes").list.len()
    return (
        pl.when(pl.col("market_type") == "scalar")
        .then(pl.lit(MarketType.SCALAR.value))
        .when(count == 2)
        .then(pl.lit(MarketType.BINARY.value))
        .when(count > 2)
        .then(pl.lit(MarketType.CATEGORICAL.value))
    )


def _status_flags() -> dict[str, pl.Expr]:
    """The flags the status rules test (pipeline.engine.normalize.mappings.POLYMARKET_FLAGS), never null."""
    prices = pl.col("_prices")
    winner = prices.list.eval(pl.element() == 1).list.any()
    scalar = pl.col("market_type") == "scalar"
    split = (prices.list.n_unique() == 1) & (prices.list.len() > 1) & _is_payout()
    payout = _is_payout() & (winner | scalar | split)
    return {
        "closed": pl.col("closed"),
        "settled": ((pl.col("uma_resolution_status") == "resolved") | payout).fill_null(False),
        "split": split.fill_null(False),
        "scalar": scalar.fill_null(False),
        "acceptingOrders": pl.col("accepting_orders").fill_null(True),
        "active": pl.col("active"),
    }


def _placeholder(volume: pl.Expr) -> pl.Expr:
    """An unnamed leg of a negative-risk event ("Person A", "Other" before it is defined): Polymarket lists it
    inactive, with no prices and no volume, until it names it (docs.polymarket.com, augmented negative risk)."""
    traded = (pl.coalesce(volume, pl.col("volume_num")) > 0).fill_null(False)
    unpriced = pl.col("outcome_prices").is_null() | (pl.col("outcome_prices") == "")
    return pl.col("neg_risk").fill_null(False) & ~pl.col("active") & unpriced & ~traded


def _is_payout() -> pl.Expr:
    """The final `outcomePrices` can be a payout: each in [0, 1], summing to 1."""
    prices = pl.col("_prices")
    in_unit = prices.list.eval((pl.element() >= 0) & (pl.element() <= 1)).list.all()
    return in_unit & ((prices.list.sum() - 1).abs() < 1e-6)


def _status(rules: tuple[StatusRule, ...], flags: dict[str, pl.Expr]) -> pl.Expr:
    """The status of the first rule whose flags all have the rule's values."""
    *conditional, last = rules
    assert not last.when, "the last status rule must apply to every market"
    chain: Any = pl
    for rule in conditional:
        condition = pl.all_horizontal([flags[name] == value for name, value in rule.when])
        chain = chain.when(condition).then(pl.lit(rule.status.value))
    return chain.otherwise(pl.lit(last.status.value))


def _spaced_time(value: pl.Expr) -> pl.Expr:
    """Gamma writes `closedTime` and `gameStartTime` as `2026-05-09 02:07:01+00`: a space where ISO-8601 has a T."""
    return parse_iso(value.str.replace(" ", "T", literal=True))


def _time_problem(wire: str, value: pl.Expr, parsed: pl.Expr) -> pl.Expr:
    return pl.when(value.is_not_null() & parsed.is_null()).then(
        pl.concat_str([pl.lit(f"field '{wire}': not a time with a UTC offset: "), quoted(value)])
    )
