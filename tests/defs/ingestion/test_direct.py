"""PMW_SOURCE=direct: the same sandbox world through the unified API and through the platforms' own APIs
(both served on loopback) lands the same tables, on a recent day and on a day behind Kalshi's cutoff."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from pipeline.cli.main import main
from pipeline.engine.schema import TABLES
from pipeline.engine.warehouse.views import connect_read_only
from pmw_sandbox import SandboxApp, SandboxConfig, WorldConfig
from pmw_sandbox.server import SandboxServer
from tests.support.loopback import LoopbackServer
from tests.support.runs import DAY, lake_tables, land_directly

# A small world whose busiest markets trade more in three days than the Data API pages back through (counting
# matches: a Polymarket match is its taker's row and its makers', and the direct source pages through takers only).
SMALL_WORLD = WorldConfig(seed=11, end=DAY, days=3, series_per_platform=3, events_per_series=3, markets_per_event=3,
                          trades_per_market_day=2_000, multivariate_markets=2)
FIRST_DAY = SMALL_WORLD.window_start.date()  # before the sandbox's Kalshi historical cutoff (one day in)

# What both paths fill, table by table, and must agree on (rows matched on the key both paths share).
# Trade ids differ by design on Polymarket (the Data API has none: `{hash}-{asset}-{n}` is derived), so
# Polymarket trades are matched on every column but the id.
AGREED = {
    "series": ["id", "title", "platform"],
    "events": ["id", "title", "series_id", "platform"],
    "markets": ["id", "platform_id", "event_id", "series_id", "title", "status", "market_type", "trading_end_at"],
    "trades": ["market_id", "price", "size", "timestamp", "outcome"],
    "price_history": ["market_id", "outcome_id", "timestamp", "close"],
}
# The columns only one path fills (non-null somewhere on one side, null everywhere on the other), listed
# so that a change in either path shows here: the unified API adds fees, price changes, trader counts,
# descriptions and the like; Kalshi's trades are anonymous; Kalshi's events are listed without their
# markets (so no market_count); Kalshi's liquidity is a deprecated placeholder, and it counts volume and open
# interest in contracts (the *_contracts columns). Kalshi's own API adds what the unified API's resource does not
# document: series fees, events' exclusivity, the legs' labels, subtitles and strikes, the last trade's price.
_MARKET_EXTRAS = {"fee_rate", "last_trades", "liquidity_score", "price_24h_changes", "price_7d_changes", "source_url",
                  "subcategory", "trading_fee", "unique_traders", "withdrawal_fee"}
_KALSHI_ABOUT = {"description", "image_url", "market_count", "slug", "total_volume"}
ONLY_UNIFIED = {
    "polymarket": {
        "series": {"market_count"},
        "events": set(),
        "markets": _MARKET_EXTRAS - {"fee_rate"} | {"open_interest", "resolution_criteria"},
        "trades": set(),
        "price_history": {"bid_ask", "open_interest", "volume"},
    },
    "kalshi": {
        "series": _KALSHI_ABOUT | {"event_count"},
        "events": _KALSHI_ABOUT | {"event_end_at", "event_start_at", "resolution_source_url"},
        "markets": _MARKET_EXTRAS | {"description", "image_url", "liquidity", "market_slug", "open_interest",
                                     "resolution_source", "slug", "tags", "volume_24h", "volume_7d", "volume_total"},
        "trades": {"transaction_hash", "user"},
        "price_history": set(),
    },
}
ONLY_DIRECT: dict[str, dict[str, set[str]]] = {p: {t: set() for t in TABLES} for p in ONLY_UNIFIED}
ONLY_DIRECT["kalshi"] |= {
    "series": {"fee_type", "fee_multiplier"},
    "events": {"mutually_exclusive"},
    "markets": {"last_trade_price", "lower_bound", "mutually_exclusive", "open_interest_contracts", "outcome_label",
                "strike_type", "subtitle", "upper_bound", "volume_24h_contracts", "volume_total_contracts"},
}
# The columns the unified resource does not document (schema.MARKETS_ADDED, EVENTS_ADDED) that Gamma fills (and
# lower_bound, upper_bound: this world lists no scalar Polymarket market on these days).
ONLY_DIRECT["polymarket"] |= {
    "events": {"mutually_exclusive"},
    "markets": {"mutually_exclusive", "last_trade_price", "settlement_value", "outcome_label", "neg_risk_market_id",
                "fee_type", "placeholder"},
}


@pytest.fixture(scope="module")
def server() -> Iterator[SandboxServer]:
    with LoopbackServer(SandboxApp(SandboxConfig(world=SMALL_WORLD))) as served:
        yield served


def _land(monkeypatch: pytest.MonkeyPatch, data_dir: Path, env: dict[str, str], day: date) -> dict[str, dict[str, Any]]:
    """Both platforms' partitions of `day` under `env`, through the assets' steps invoked directly (the two paths
    are compared, not a run's machinery, which is the same for both)."""
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("PMW_DATA_DIR", str(data_dir))
    landed = {}
    for platform in ("polymarket", "kalshi"):
        run = land_directly(platform, day)
        assert run.success, run.failures()
        landed[platform] = lake_tables(data_dir, platform, day)
        metadata = run.metadata["trades"]
        landed[platform]["trades coverage"] = {k: getattr(v, "value", v) for k, v in metadata.items()}
    return landed


def _both_paths(monkeypatch: pytest.MonkeyPatch, tmp: Path, server: SandboxServer, day: date) -> tuple[Any, Any]:
    unified = {"PMW_SOURCE": "api", "PMW_API_URL": server.url, "PMW_API_KEY": server.app.config.api_keys[0],
               "PMW_RATE_LIMIT_PER_MIN": "1000000"}  # the loopback sandbox has no limit: don't wait for one
    api = _land(monkeypatch, tmp / "api", unified, day)
    direct = _land(monkeypatch, tmp / "direct", {"PMW_SOURCE": "direct", "PMW_DIRECT_URL": server.url}, day)
    return api, direct


def _comparable(platform: str, table: str, api: pl.DataFrame, direct: pl.DataFrame) -> tuple[Any, Any]:
    """The rows both paths give, as both give them.

    Kalshi's own API names the outcomes of scalar markets Yes and No (the unified API: Long and Short). Its
    candles price the first outcome only; an hour without trades closes at the last traded close, and one before
    the market's first trade has no price, where the unified API has one: those hours are compared on their keys
    alone. A Polymarket CLOB point
    is a close only. The unified API returns each Polymarket match as its taker's row and its makers' rows
    (`taker` false); the direct path asks the Data API for the takers' rows only. The unified API gives a
    market's scheduled close as `trading_end_at`; the direct path gives Gamma's `closedTime` when the market
    is closed, and keeps the scheduled close as `resolution_date`.
    """
    if table == "price_history":
        api, direct = (f.with_columns(close=pl.col("price").struct.field("close")) for f in (api, direct))
        if platform == "kalshi":
            api = api.filter(pl.col("outcome_id").is_in(["yes", "long"])).with_columns(outcome_id=pl.lit("yes"))
            unpriced = direct.select("market_id", "timestamp", unpriced=pl.col("close").is_null())
            api = api.join(unpriced, on=["market_id", "timestamp"], how="left").with_columns(
                close=pl.when(pl.col("unpriced")).then(None).otherwise("close")
            )
    if table == "trades" and platform == "kalshi":
        api = api.with_columns(pl.col("outcome").replace({"Long": "Yes", "Short": "No"}))
    if table == "trades" and platform == "polymarket":  # the Data API is asked for the takers' rows only
        api = api.filter(pl.col("taker"))
    if table == "markets" and platform == "polymarket":  # a closed market ends trading at Gamma's closedTime
        direct = direct.with_columns(trading_end_at=pl.col("resolution_date"))
    return api, direct


def _filled(frame: pl.DataFrame) -> set[str]:
    return {c for c in frame.columns if frame[c].null_count() < frame.height}


@pytest.mark.slow
@pytest.mark.parametrize("day", [DAY, FIRST_DAY], ids=["last day", "first day, behind the Kalshi cutoff"])
def test_api_and_direct_land_the_same_tables(
    pipeline_env: Path, monkeypatch: pytest.MonkeyPatch, server: SandboxServer, day: date
) -> None:
    api, direct = _both_paths(monkeypatch, pipeline_env, server, day)
    for platform in ("polymarket", "kalshi"):
        for table, columns in AGREED.items():
            left, right = _comparable(platform, table, api[platform][table], direct[platform][table])
            assert left.height > 0, (platform, table)
            assert set(right["_source"]) == {"direct"} and set(left["_source"]) == {"api"}
            if table == "trades" and not direct[platform]["trades coverage"]["complete"]:
                _assert_reached_part_agrees(left, right, direct[platform]["trades coverage"])
                continue
            assert api[platform]["trades coverage"]["complete"]
            assert sorted(left.select(columns).rows()) == sorted(right.select(columns).rows()), (platform, table)
        for table in TABLES:
            only_api = _filled(api[platform][table]) - _filled(direct[platform][table])
            only_direct = _filled(direct[platform][table]) - _filled(api[platform][table])
            assert (only_api, only_direct) == (ONLY_UNIFIED[platform][table], ONLY_DIRECT[platform][table]), (
                platform, table)
    if day == FIRST_DAY:
        assert not direct["polymarket"]["trades coverage"]["complete"], "the Data API cannot page back that far"


def _assert_reached_part_agrees(api: pl.DataFrame, direct: pl.DataFrame, coverage: dict[str, Any]) -> None:
    """An incomplete partition (the Data API's offset cap) holds only true trades, every trade of its complete
    markets, and says which markets it could not read back to the day's start."""
    columns = AGREED["trades"]
    assert set(direct.select(columns).rows()) <= set(api.select(columns).rows())
    counts = api.group_by("market_id").len().join(direct.group_by("market_id").len(), on="market_id", how="left")
    short = counts.filter(pl.col("len_right").fill_null(0) < pl.col("len"))["market_id"].to_list()
    assert short and coverage["incomplete_markets"] == len(short)
    assert set(coverage["incomplete_examples"]) <= set(short)


def _land_kalshi_directly(world: WorldConfig, data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The day's Kalshi partition of `world`, landed into `data_dir` through the sandbox's Kalshi-shaped API."""
    with LoopbackServer(SandboxApp(SandboxConfig(world=world))) as served:
        settings = {"PMW_SOURCE": "direct", "PMW_DIRECT_URL": served.url, "PMW_DATA_DIR": str(data_dir)}
        for name, value in settings.items():
            monkeypatch.setenv(name, value)
        run = land_directly("kalshi", DAY)
    assert not run.errors, run.errors


def test_kalshi_markets_that_never_traded_land_through_the_platform_without_a_price(
    pipeline_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A world without trades, through Kalshi's own API: each market comes as Kalshi writes one that never
    traded (`last_price` 0). None may land at a 0% probability; a settled one is priced by its result."""
    _land_kalshi_directly(replace(SMALL_WORLD, trades_per_market_day=0.0), pipeline_env, monkeypatch)
    markets = lake_tables(pipeline_env, "kalshi", DAY)["markets"]
    settled = pl.col("status").is_in(["resolved", "cancelled"])
    unsettled = markets.filter(~settled)
    assert unsettled.height and unsettled["current_prices"].list.len().max() == 0
    prices = markets.filter(pl.col("status") == "resolved")["current_prices"].list.first().struct.field("price")
    assert prices.len() and set(prices.to_list()) <= {0.0, 1.0}


def test_kalshi_fields_land_with_their_meaning_through_the_platform(
    pipeline_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 22 end to end, through the sandbox's Kalshi-shaped API: legs of mutually exclusive events keep
    their labels and grouping, strikes their bounds, settled scalars their settlement, series their fees; the
    deprecated liquidity is no value; trades without `taker_side` land; candles from the batch endpoint land
    under each market."""
    # Four series (the fourth is scalar), one of whose markets settles on the day.
    world = replace(SMALL_WORLD, seed=1, series_per_platform=4, markets_per_event=2, trades_per_market_day=100,
                    multivariate_markets=0)
    _land_kalshi_directly(world, pipeline_env, monkeypatch)
    tables = lake_tables(pipeline_env, "kalshi", DAY)
    markets = tables["markets"]
    legs = markets.filter(pl.col("mutually_exclusive"))
    assert legs.height and legs["outcome_label"].null_count() == 0
    assert set(tables["events"].filter(pl.col("mutually_exclusive"))["id"]) >= set(legs["event_id"])
    bounded = markets.filter(pl.col("strike_type") == "between")
    assert bounded.height and (bounded["lower_bound"] < bounded["upper_bound"]).all()
    scalars = markets.filter((pl.col("market_type") == "scalar") & (pl.col("status") == "resolved"))
    yes_price = pl.col("current_prices").list.first().struct.field("price")
    assert scalars.height and scalars.select((yes_price == pl.col("settlement_value")).all()).item()
    assert scalars["resolved_at"].null_count() == 0 and scalars["expiration_value"].null_count() == 0
    assert markets["liquidity"].null_count() == markets.height  # Kalshi's deprecated placeholder, 0
    assert tables["series"]["fee_type"].n_unique() > 1
    trades = tables["trades"]
    assert trades.height and trades["outcome"].null_count() == 0
    assert trades["metadata"].str.json_decode().struct.field("is_block_trade").null_count() == 0
    assert tables["price_history"]["market_id"].n_unique() > 1


def test_a_polymarket_match_counts_once_in_the_daily_volume(
    pipeline_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Data API reports a match as its taker's row and its makers' rows (same transaction, price and moment,
    the makers' sizes adding up to the taker's) unless asked `takerOnly=true`, which the direct source does: a day
    through PMW_SOURCE=direct counts each match once in marts.market_daily."""
    app = SandboxApp(SandboxConfig(world=replace(SMALL_WORLD, trades_per_market_day=100.0)))
    with LoopbackServer(app) as served:
        for name, value in {"PMW_SOURCE": "direct", "PMW_DIRECT_URL": served.url}.items():
            monkeypatch.setenv(name, value)
        assert land_directly("polymarket", DAY).success
    assert main(["sql"]) == 0
    markets = lake_tables(pipeline_env, "polymarket", DAY)["markets"].select("id", "platform_id")
    every_row = pl.concat(
        pl.DataFrame(_data_api_trades(app, condition, taker_only="false")).with_columns(market_id=pl.lit(market_id))
        for market_id, condition in markets.iter_rows()
    ).filter(pl.from_epoch("timestamp").dt.date() == DAY)
    matches = every_row.group_by("market_id").agg(
        rows=pl.len(), matches=pl.col("transactionHash").n_unique(), all_rows=(pl.col("price") * pl.col("size")).sum()
    )
    with connect_read_only(pipeline_env / "warehouse.duckdb") as connection:
        daily = connection.sql(f"SELECT market_id, trades, volume FROM marts.market_daily "
                               f"WHERE platform = 'polymarket' AND day = '{DAY}'").pl()
    compared = matches.join(daily, on="market_id", how="full", coalesce=True)
    assert compared.height == daily.height > 0 and (compared["rows"] > compared["matches"]).all()
    assert (compared["trades"] == compared["matches"]).all()  # a match is one trade
    assert ((compared["volume"] - compared["all_rows"] / 2).abs() < 1e-6 * compared["volume"]).all()
    print(f"\npolymarket {DAY}: {compared['rows'].sum()} Data API rows (takerOnly=false) are "
          f"{compared['matches'].sum()} matches; market_daily.volume {compared['volume'].sum():.2f} "
          f"(summing every row: {compared['all_rows'].sum():.2f})")


def _data_api_trades(app: SandboxApp, condition: str, taker_only: str) -> list[dict[str, Any]]:
    query = [("market", condition), ("takerOnly", taker_only), ("limit", "10000")]
    return app.handle("GET", "/polymarket/data/trades", query, {}).json()


@pytest.mark.slow
def test_a_polymarket_market_open_past_its_end_date_lands_on_every_day_it_trades(
    pipeline_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Gamma's `endDate` is a scheduled date: a market trades until Gamma closes it. The world keeps one
    Polymarket market open past its `endDate` (pmw_sandbox.catalogue); through PMW_SOURCE=direct it lands on every
    day of the window it trades, after its `endDate` too, with that day's trades and prices."""
    world = replace(SMALL_WORLD, trades_per_market_day=50.0)
    app = SandboxApp(SandboxConfig(world=world))
    late = [m for m in app.world.markets("polymarket") if m.status == "open" and m.trading_end < app.world.as_of]
    assert len(late) == 1
    market = late[0]
    days = [world.start_day + timedelta(days=n) for n in range(world.days)]
    assert any(day > market.trading_end.date() for day in days)
    with LoopbackServer(app) as served:
        for name, value in {"PMW_SOURCE": "direct", "PMW_DIRECT_URL": served.url}.items():
            monkeypatch.setenv(name, value)
        for day in days:
            run = land_directly("polymarket", day)
            assert not run.errors, run.errors
            tables = lake_tables(pipeline_env, "polymarket", day)
            assert market.id in set(tables["markets"]["id"]), f"{market.id} (endDate {market.trading_end}) on {day}"
            start = int(datetime.combine(day, time(), UTC).timestamp())
            trades = [t for t in app.world.trade_records(market, 0, app.world.trade_count(market, True), True)
                      if start <= t["timestamp"] < start + 86_400]
            landed = tables["trades"].filter(pl.col("market_id") == market.id)
            assert trades and landed.height == len(trades), day
            assert tables["price_history"].filter(pl.col("market_id") == market.id).height, day
