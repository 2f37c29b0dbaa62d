"""Polymarket's own responses -> the warehouse tables, with `_source` = `direct`.

Gamma's series, events and markets (the markets read by `pipeline.engine.normalize.polymarket_markets`), the
CLOB's price history and the Data API's trades; the field, status and market-type tables in
`pipeline.engine.normalize.mappings`. Which columns stay null and how trade ids are made, in docs/design.md,
"Polymarket's records".
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

import polars as pl

from pipeline.engine.normalize.native_frames import (
    NESTED_COUNT,
    NESTED_PROBLEM,
    direct_lineage,
    finish,
    flag,
    iso_text,
    number,
    read,
    shape_error,
    text,
    unix_number,
    with_nested_count,
)
from pipeline.engine.normalize.polymarket_markets import (
    SERIES_REFERENCE,
    TAGS,
    category,
    non_empty,
    read_markets,
    series_id,
)
from pipeline.engine.normalize.rows import exact_price
from pipeline.engine.normalized import Normalized
from pipeline.engine.schema import TABLES, Field, Platform
from pipeline.engine.wire_times import parse_iso, parse_unix

PLATFORM = Platform.POLYMARKET.value

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
    SERIES_REFERENCE,
    text("seriesSlug"),
)
SERIES_FIELDS = (
    text("id", required=True),
    text("title", required=True),
    text("slug"),
    text("description"),
    text("image"),
    number("volume"),
    TAGS,
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


def normalize_markets(
    body: Any, *, day: dt.date, fetched_at: dt.datetime, context: Mapping[str, str] | None = None
) -> dict[str, Normalized]:
    """Gamma markets -> `markets`."""
    return {"markets": read_markets(_gamma_records(body, "markets"), direct_lineage(PLATFORM, day, fetched_at))}




# -- events and series -------------------------------------------------------------------------------------


def normalize_events(
    body: Any, *, day: dt.date, fetched_at: dt.datetime, context: Mapping[str, str] | None = None
) -> dict[str, Normalized]:
    """Gamma events -> `events`, and the markets they nest -> `markets`.

    A nested market has no link to its event, so it is read as `/markets` sends it: with its event (without
    the event's markets) as `events[0]`. Nested markets are normalized whatever becomes of their event.
    """
    records = _gamma_records(body, "events")
    lineage = direct_lineage(PLATFORM, day, fetched_at)
    native = with_nested_count(read(EVENT_FIELDS, records), "markets")
    columns = {
        "id": pl.col("id"),
        "platform_id": pl.col("id"),
        "title": pl.col("title"),
        "series_id": series_id(pl.col("series"), pl.col("series_slug")),
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
    markets = read_markets(_nested_markets(records), lineage)
    return {"events": _without_placeholders(events, markets.rows), "markets": markets}


def _without_placeholders(events: Normalized, markets: pl.DataFrame) -> Normalized:
    """The events with their placeholder legs (markets' `placeholder`) left out of `market_count`."""
    placeholders = (markets.filter(pl.col("placeholder")).unique(["event_id", "id"])
                    .group_by("event_id").agg(pl.len().cast(pl.Float64).alias("_placeholders")))
    rows = events.rows.join(placeholders, left_on="id", right_on="event_id", how="left", maintain_order="left")
    count = pl.col("market_count") - pl.col("_placeholders").fill_null(0.0)
    return Normalized(rows.with_columns(count.alias("market_count")).drop("_placeholders"), events.rejects)


def _nested_markets(events: list[Any]) -> list[Any]:
    nested = []
    for event in events:
        markets = event.get("markets") if isinstance(event, dict) else None
        if isinstance(markets, list):
            parent = {key: value for key, value in event.items() if key != "markets"}
            nested += [m if not isinstance(m, dict) or "events" in m else {**m, "events": [parent]} for m in markets]
    return nested


def normalize_series(
    body: Any, *, day: dt.date, fetched_at: dt.datetime, context: Mapping[str, str] | None = None
) -> dict[str, Normalized]:
    """Gamma series -> `series`. The events a series may nest are counted, not read: `/events` reads them."""
    native = with_nested_count(read(SERIES_FIELDS, _gamma_records(body, "series")), "events")
    columns = {
        "id": pl.col("id"),
        "platform_id": pl.col("id"),
        "title": pl.col("title"),
        "slug": pl.col("slug"),
        "description": pl.col("description"),
        "image_url": pl.col("image"),
        "category": category(pl.col("tags").list.eval(pl.element().struct.field("label"))),
        "tags": pl.col("tags").list.eval(pl.element().struct.field("label")),
        "event_count": pl.col(NESTED_COUNT),
        "total_volume": pl.col("volume"),
    }
    lineage = direct_lineage(PLATFORM, day, fetched_at)
    return {"series": finish(TABLES["series"], native, columns, [pl.col(NESTED_PROBLEM)], lineage)}


# -- trades and price history ------------------------------------------------------------------------------


def normalize_trades(
    body: Any, *, day: dt.date, fetched_at: dt.datetime, context: Mapping[str, str] | None = None
) -> dict[str, Normalized]:
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
    given = [non_empty(pl.col(name)).alias(name) for name in ("name", "pseudonym", "profile_image")]
    return pl.when(pl.any_horizontal(value.is_not_null() for value in given)).then(pl.struct(given))


def normalize_price_history(
    body: Any, *, day: dt.date, fetched_at: dt.datetime, context: Mapping[str, str] | None = None
) -> dict[str, Normalized]:
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
