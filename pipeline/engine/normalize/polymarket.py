"""Polymarket's own responses -> the warehouse tables, with `_source` = `direct`.

Endpoints read: Gamma `/markets`, `/events`, `/series` (a bare array, one object for `/markets/{id}` and the
like, or a page wrapping its array: `{data, pagination}`, `{events | markets | series, next_cursor}`), CLOB
`/prices-history` (`{"history": [{"t", "p"}]}` for one token) and Data API `/trades` (a camelCase bare array, or
the newer snake_case `{data, pagination}` envelope).

Which native field feeds which column, the status rules and the market-type rules are the tables of
`pipeline.engine.normalize.mappings` (rendered in docs/schema.md); the status rules are read from there. Columns
those tables do not name stay null, because Gamma, the CLOB and the Data API do not send them:
- series: market_count, fee_type, fee_multiplier.
- events: nothing (but Gamma may leave a field empty).
- markets: subcategory, liquidity_score, open_interest, unique_traders, trading_fee, withdrawal_fee, source_url,
  resolution_criteria (the description holds the rules), price changes, last_trades, subtitle, strike_type,
  the *_contracts columns (Polymarket counts USDC), expiration_value; metadata's amm_type, format_type and score.
- trades: taker when the trades were not asked taker-only (the Data API does not say which row took).
- price_history: open, high, low, volume, open_interest, bid_ask (a CLOB point is a price, not a candle).

What the fields mean, not only their types (issues 22, 34): a closed market is never paused; `[\"0\", \"0\"]`
prices are placeholders; the price is the one Polymarket displays (the last trade when the spread is wider than
10 cents, an empty side of the book counted as Gamma's `spread` counts it); a closed market's trading ended at
`closedTime` (before or after `endDate`); the category comes from the event's tags when Gamma leaves `category`
empty; the exact decimal strings `volume` and `liquidity` beat their float twins; `gameStartTime` is a start only
on a game; a market without `startDate` opened with its event, else when created; an unnamed negative-risk leg is
a `placeholder`, not counted in its event's `market_count`; Data API fill prices are rounded to 6 decimals
(`exact_price`).

Grouping: every Gamma market is a market of its own, also inside a negative-risk event (`negRisk`): its
tokens are its outcomes, and `event_id` groups it with its siblings. No categorical market is built out of
a negative-risk event, because its members keep their own ids, trades and prices.

Trade ids: the Data API sends none. `trade_id` is `{transactionHash}-{asset}-{n}`, n counting from 0 the
trades of that transaction and token in the order of the response (among the records whose JSON types are
right). It is stable as long as the fills of one transaction are normalised in one call: a caller paging
through a market's trades normalises the pages together.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any, NamedTuple

import orjson
import polars as pl

from pipeline.engine.normalize.frames import (
    NESTED_COUNT,
    NESTED_PROBLEM,
    Native,
    Normalised,
    book_quote,
    decimal,
    direct_lineage,
    exact_price,
    finish,
    flag,
    iso_text,
    number,
    objects,
    quoted,
    read,
    shape_error,
    shown,
    struct,
    text,
    unix_number,
    with_nested_count,
)
from pipeline.engine.normalize.mappings import (
    POLYMARKET_CATEGORIES,
    POLYMARKET_STATUS_RULES,
    POLYMARKET_WIDE_SPREAD,
    StatusRule,
)
from pipeline.engine.schema import TABLES, Field, MarketType, Platform
from pipeline.engine.wire_times import parse_iso, parse_unix

PLATFORM = Platform.POLYMARKET.value
_MARKETS = TABLES["markets"].polars_schema

# The parent event a Gamma market nests (`events[0]`), with the series and tags an event may nest.
_SERIES_REFERENCE = objects("series", text("id"))
_TAGS = objects("tags", text("label"))
_PARENT_EVENT = objects("events", text("id"), text("title"), text("slug"), text("category"), iso_text("startDate"),
                        _SERIES_REFERENCE, text("seriesSlug"), _TAGS)

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
EVENT_FIELDS = (
    text("id", required=True),
    text("title", required=True),
    text("slug"),
    text("description"),
    text("image"),
    text("resolutionSource"),
    iso_text("startDate"),
    iso_text("startTime"),
    iso_text("endDate"),
    number("volume"),
    flag("negRisk"),
    _SERIES_REFERENCE,
    text("seriesSlug"),
)
SERIES_FIELDS = (
    text("id", required=True),
    text("title", required=True),
    text("slug"),
    text("description"),
    text("image"),
    number("volume"),
    _TAGS,
)
POINT_FIELDS = (unix_number("t", required=True), number("p", required=True))
_TRADE_COMMON = (
    text("side"),
    number("size", required=True, non_negative=True),
    number("price", required=True),
    unix_number("timestamp", required=True),
    text("outcome"),
    text("name"),
    text("pseudonym"),
)
CAMEL_TRADE_FIELDS = (
    text("transactionHash", required=True),
    text("asset", required=True),
    *_TRADE_COMMON,
    text("conditionId"),
    number("outcomeIndex"),
    text("proxyWallet"),
    text("profileImage"),
)
SNAKE_TRADE_FIELDS = (
    text("transaction_hash", required=True),
    text("token_id", required=True),
    *_TRADE_COMMON,
    text("condition_id"),
    number("outcome_index"),
    text("proxy_wallet"),
    text("profile_image"),
)


# -- bodies ------------------------------------------------------------------------------------------------


def _gamma_records(body: Any, entity: str) -> list[Any]:
    """A Gamma list is a bare array; a single resource (`/markets/{id}`, `/events/slug/{slug}`) one object, with
    its `id`; a paged listing wraps its array with the paging state: `/events/pagination` as `{data, pagination}`,
    the keyset listings as `{events | markets | series, next_cursor}`. Any other object is no Gamma answer."""
    if isinstance(body, list):
        return body
    if isinstance(body, dict):
        if "id" in body:
            return [body]
        wrapped = next((body[key] for key in (entity, "data") if isinstance(body.get(key), list)), None)
        if wrapped is not None:
            return wrapped
    raise shape_error(
        f"polymarket {entity}", f'a Gamma array, one object with its id, or a {{"{entity}" | "data": [...]}} page', body
    )


def _trade_records(body: Any) -> tuple[list[Any], tuple[Field, ...]]:
    """The trades and the fields their shape uses: camelCase in a bare array, snake_case in `{data, ...}`."""
    if isinstance(body, list):
        return body, CAMEL_TRADE_FIELDS
    if isinstance(body, dict) and isinstance(body.get("data"), list):
        return body["data"], SNAKE_TRADE_FIELDS
    raise shape_error("polymarket trades", 'a Data API array or a {"data": [...]} envelope', body)


def _history_records(body: Any) -> list[Any]:
    if isinstance(body, dict) and isinstance(body.get("history"), list):
        return body["history"]
    raise shape_error("polymarket price_history", 'a CLOB {"history": [...]} object', body)


def _required_context(context: Mapping[str, str] | None, keys: tuple[str, ...], why: str) -> dict[str, str]:
    missing = [key for key in keys if not (context or {}).get(key)]
    if missing:
        raise ValueError(f"polymarket {why}: context needs {', '.join(missing)}")
    return {key: (context or {})[key] for key in keys}


# -- markets -----------------------------------------------------------------------------------------------


def normalise_markets(
    body: Any, *, day: dt.date, fetched_at: dt.datetime, context: Mapping[str, str] | None = None
) -> dict[str, Normalised]:
    """Gamma markets -> `markets`."""
    return {"markets": _markets(_gamma_records(body, "markets"), direct_lineage(PLATFORM, day, fetched_at))}


class _Outcomes(NamedTuple):
    """What a Gamma market's three JSON-in-string arrays give, or the problem that stops reading them."""

    outcomes: list[dict[str, str]] | None = None
    current_prices: list[dict[str, Any]] | None = None
    token_ids: list[str] | None = None
    prices: list[float] | None = None
    problem: str | None = None


def _markets(records: list[Any], lineage: dict[str, Any]) -> Normalised:
    native = _with_outcomes(_with_book(read(MARKET_FIELDS, _numbers_as_text(records))))
    event = pl.col("events").list.first().struct
    volume, volume_problem = decimal(pl.col("volume"), "volume")
    liquidity, liquidity_problem = decimal(pl.col("liquidity"), "liquidity")
    lower, lower_problem = decimal(pl.col("lower_bound"), "lowerBound")
    upper, upper_problem = decimal(pl.col("upper_bound"), "upperBound")
    game = _given(pl.col("sports_market_type")).is_not_null() | _given(pl.col("game_id")).is_not_null()
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
        "series_id": _series_id(event.field("series"), event.field("series_slug")),
        "slug": pl.col("slug"),
        "market_slug": pl.col("slug"),
        "title": pl.col("question"),
        "description": pl.col("description"),
        "category": pl.coalesce(
            _given(pl.col("category")),
            _given(event.field("category")),
            _category(event.field("tags").list.eval(pl.element().struct.field("label"))),
            pl.when(_given(pl.col("sports_market_type")).is_not_null()).then(pl.lit("Sports")),
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


def _series_id(series: pl.Expr, slug: pl.Expr) -> pl.Expr:
    """The event's series: the id of the series it nests, else its `seriesSlug` (Gamma leaves the `series` array
    out of the event a market nests; the slug names the same series, and the series are looked up by it)."""
    return pl.coalesce(series.list.first().struct.field("id"), _given(slug))


def _given(value: pl.Expr) -> pl.Expr:
    """A text value, null when empty (Gamma's "no value")."""
    return pl.when(value != "").then(value)


def _category(labels: pl.Expr) -> pl.Expr:
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


# -- events and series -------------------------------------------------------------------------------------


def normalise_events(
    body: Any, *, day: dt.date, fetched_at: dt.datetime, context: Mapping[str, str] | None = None
) -> dict[str, Normalised]:
    """Gamma events -> `events`, and the markets they nest -> `markets`.

    A nested market has no link to its event, so it is read as `/markets` sends it: with its event (without
    the event's markets) as `events[0]`. Nested markets are normalised whatever becomes of their event.
    """
    records = _gamma_records(body, "events")
    lineage = direct_lineage(PLATFORM, day, fetched_at)
    native = with_nested_count(read(EVENT_FIELDS, records), "markets")
    columns = {
        "id": pl.col("id"),
        "platform_id": pl.col("id"),
        "title": pl.col("title"),
        "series_id": _series_id(pl.col("series"), pl.col("series_slug")),
        "slug": pl.col("slug"),
        "description": pl.col("description"),
        "image_url": pl.col("image"),
        "resolution_source_url": pl.col("resolution_source"),
        "event_start_at": pl.coalesce(parse_iso(pl.col("start_time")), parse_iso(pl.col("start_date"))),
        "event_end_at": parse_iso(pl.col("end_date")),
        "market_count": pl.col(NESTED_COUNT),
        "total_volume": pl.col("volume"),
        "mutually_exclusive": pl.col("neg_risk"),
    }
    events = finish(TABLES["events"], native, columns, [pl.col(NESTED_PROBLEM)], lineage)
    markets = _markets(_nested_markets(records), lineage)
    return {"events": _without_placeholders(events, markets.rows), "markets": markets}


def _without_placeholders(events: Normalised, markets: pl.DataFrame) -> Normalised:
    """The events with their placeholder legs (markets' `placeholder`) left out of `market_count`."""
    placeholders = (markets.filter(pl.col("placeholder")).unique(["event_id", "id"])
                    .group_by("event_id").agg(pl.len().cast(pl.Float64).alias("_placeholders")))
    rows = events.rows.join(placeholders, left_on="id", right_on="event_id", how="left", maintain_order="left")
    count = pl.col("market_count") - pl.col("_placeholders").fill_null(0.0)
    return Normalised(rows.with_columns(count.alias("market_count")).drop("_placeholders"), events.rejects)


def _nested_markets(events: list[Any]) -> list[Any]:
    nested = []
    for event in events:
        markets = event.get("markets") if isinstance(event, dict) else None
        if isinstance(markets, list):
            parent = {key: value for key, value in event.items() if key != "markets"}
            nested += [m if not isinstance(m, dict) or "events" in m else {**m, "events": [parent]} for m in markets]
    return nested


def normalise_series(
    body: Any, *, day: dt.date, fetched_at: dt.datetime, context: Mapping[str, str] | None = None
) -> dict[str, Normalised]:
    """Gamma series -> `series`. The events a series may nest are counted, not read: `/events` reads them."""
    native = with_nested_count(read(SERIES_FIELDS, _gamma_records(body, "series")), "events")
    columns = {
        "id": pl.col("id"),
        "platform_id": pl.col("id"),
        "title": pl.col("title"),
        "slug": pl.col("slug"),
        "description": pl.col("description"),
        "image_url": pl.col("image"),
        "category": _category(pl.col("tags").list.eval(pl.element().struct.field("label"))),
        "tags": pl.col("tags").list.eval(pl.element().struct.field("label")),
        "event_count": pl.col(NESTED_COUNT),
        "total_volume": pl.col("volume"),
    }
    lineage = direct_lineage(PLATFORM, day, fetched_at)
    return {"series": finish(TABLES["series"], native, columns, [pl.col(NESTED_PROBLEM)], lineage)}


# -- trades and price history ------------------------------------------------------------------------------


def normalise_trades(
    body: Any, *, day: dt.date, fetched_at: dt.datetime, context: Mapping[str, str] | None = None
) -> dict[str, Normalised]:
    """Data API trades -> `trades`, in polars expressions over the whole response (a hot path).

    `market_id` is `context["market_id"]` when the caller names the market it asked for (Gamma's numeric id,
    as in `markets.id`), else the trade's `conditionId` (then trades point at `markets.platform_id`).
    `context["taker_only"]` = "true" says the trades were asked with `takerOnly=true`: each row is a taker's.
    """
    records, fields = _trade_records(body)
    native = read(fields, records)
    if "token_id" in native.frame.columns:
        native = native.with_columns(native.frame["token_id"].alias("asset"))
    market_id = (context or {}).get("market_id")
    takers = (context or {}).get("taker_only") == "true"
    index = pl.col("outcome_index")
    columns = {
        "trade_id": pl.concat_str(
            [pl.col("transaction_hash"), pl.col("asset"), pl.int_range(pl.len()).over("transaction_hash", "asset")],
            separator="-",
        ),
        "market_id": pl.lit(market_id, pl.String) if market_id else pl.col("condition_id"),
        "side": pl.col("side").str.to_lowercase(),
        "price": exact_price(pl.col("price")),
        "size": pl.col("size"),
        "timestamp": parse_unix(pl.col("timestamp")),
        "outcome": pl.col("outcome"),
        "taker": pl.lit(True if takers else None, pl.Boolean),
        "transaction_hash": pl.col("transaction_hash"),
        "user": _user(),
        "metadata": pl.struct(
            asset=pl.col("asset"),
            condition_id=pl.col("condition_id"),
            outcome_index=index.cast(pl.Int64, strict=False),
            proxy_wallet=pl.col("proxy_wallet"),
        ).struct.json_encode(),
    }
    wire = next(f.wire for f in fields if f.name == "outcome_index")  # as this shape writes it
    problems = [
        pl.when(index.is_not_null() & (index != index.floor())).then(
            pl.concat_str([pl.lit(f"field '{wire}': not a whole number: "), index.cast(pl.String)])
        )
    ]
    return {"trades": finish(TABLES["trades"], native, columns, problems, direct_lineage(PLATFORM, day, fetched_at))}


def _user() -> pl.Expr:
    """The trader's public profile; null when the trade names none of it (an anonymous trader's are empty)."""
    given = [_given(pl.col(name)).alias(name) for name in ("name", "pseudonym", "profile_image")]
    return pl.when(pl.any_horizontal(value.is_not_null() for value in given)).then(pl.struct(given))


def normalise_price_history(
    body: Any, *, day: dt.date, fetched_at: dt.datetime, context: Mapping[str, str] | None = None
) -> dict[str, Normalised]:
    """CLOB `/prices-history` of one token -> `price_history`.

    The response names neither the market nor the token: `context` must give `market_id` (as in
    `markets.id`) and `outcome_id` (the token id, as in `markets.outcomes[].id`). A point is a price at `t`,
    not a candle: it fills `price.close` only.
    """
    ids = _required_context(context, ("market_id", "outcome_id"), "price_history (a CLOB history is one token's)")
    native = read(POINT_FIELDS, _history_records(body))
    no_price = pl.lit(None, pl.Float64)
    columns = {
        "timestamp": parse_unix(pl.col("t")),
        "price": pl.struct(open=no_price, high=no_price, low=no_price, close=pl.col("p")),
        "market_id": pl.lit(ids["market_id"], pl.String),
        "outcome_id": pl.lit(ids["outcome_id"], pl.String),
    }
    lineage = direct_lineage(PLATFORM, day, fetched_at)
    return {"price_history": finish(TABLES["price_history"], native, columns, [], lineage)}
