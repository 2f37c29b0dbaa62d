"""The shapes of Kalshi's fields, each derived from the world: prices sent twice, as dollar strings
(`yes_bid_dollars: "0.4200"`) and deprecated integer cents; counts as fixed-point strings (`volume_fp`) and integers;
the legs of mutually exclusive events (temperature brackets, a game's two teams) titled with the world's title
and named by `yes_sub_title`, and strikes (`strike_type`, `floor_strike`, `cap_strike`) read from the tickers
(`leg_of`); settled markets with `settlement_ts` (and scalars with `settlement_value_dollars`, `expiration_value`);
trades with `taker_outcome_side`, `taker_book_side` and `is_block_trade` (the deprecated `taker_side` only on the
historical tier); candles.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

import numpy as np

from pipeline.engine.schema import MarketStatus, MarketType
from pmw_sandbox.activity import MarketActivity
from pmw_sandbox.catalogue import Market
from pmw_sandbox.native_http import Record, iso_seconds
from pmw_sandbox.world import iso

BLOCK_TRADE_SIZE = 250  # the sandbox's block trades: the largest prints


def dollars(price: float) -> str:
    return f"{price:.4f}"


def cents(price: float) -> int:
    return round(price * 100)


def priced(name: str, price: float) -> Record:
    """A price as Kalshi sends it since 2026: the dollar string beside the deprecated integer cents."""
    return {name: cents(price), f"{name}_dollars": dollars(price)}


def book(yes: Record, no: Record, *, empty: bool) -> Record:
    """The best quotes of both sides; an empty book (a settled market, or one that never traded) as Kalshi writes
    one (the recorded never-traded market): Yes bid and ask 0, No bid and ask 100 cents, prices no order rests at."""
    if empty:
        quotes = {"yes_bid": 0.0, "yes_ask": 0.0, "no_bid": 1.0, "no_ask": 1.0}
    else:
        quotes = {f"{name}_{side}": prices.get(side, prices["price"])
                  for name, prices in (("yes", yes), ("no", no)) for side in ("bid", "ask")}
    previous = {f"previous_{name}": quotes[name] for name in ("yes_bid", "yes_ask")}
    return {key: value for name, price in (quotes | previous).items() for key, value in priced(name, price).items()}


def counted(name: str, count: float) -> Record:
    return {name: int(count), f"{name}_fp": f"{count:.2f}"}


def result(market: Market, yes_price: float) -> str:
    if market.status != MarketStatus.RESOLVED:
        return ""
    if market.market_type == MarketType.SCALAR:
        return "scalar"
    return "yes" if yes_price >= 0.5 else "no"


@dataclass(frozen=True)
class Leg:
    """How Kalshi names and bounds one market among its event's: the Yes side's short title, the subtitle,
    and the strike."""

    label: str
    subtitle: str
    strike_type: str
    floor: float | None = None
    cap: float | None = None


def leg_of(market: Market) -> Leg:
    """The market's leg, read from its ticker as the world builds it (`KXBTCD-...-T91000`, `KXHIGHNY-...-B46.5`,
    `KXFED-...-T3.75`, `KXCPIYOY-...-S2`, `KXNBAGAME-...-LAL`)."""
    suffix = market.id.rsplit("-", 1)[-1]
    if market.series_id.startswith(("KXBTCD", "KXFED")):
        floor = float(suffix[1:])
        shown = f"${floor:,.0f} or above" if market.series_id.startswith("KXBTCD") else f"Above {floor:.2f}%"
        return Leg(shown, shown, "greater", floor=floor)
    if market.series_id.startswith("KXHIGHNY"):
        low = float(suffix[1:]) - 0.5
        shown = f"{low:.0f}° to {low + 1:.0f}°"
        return Leg(shown, shown, "between", floor=low, cap=low + 1)
    if market.series_id.startswith("KXCPIYOY"):
        low = 2.0 + 0.5 * (int(suffix[1:]) - 1)
        return Leg(f"{low:.1f}% to {low + 0.5:.1f}%", "", "between", floor=low, cap=low + 0.5)
    return Leg(suffix, "", "custom")  # a team of a game


def settlement(market: Market, yes_price: float, settled_at: datetime | None) -> Record:
    """Kalshi's settlement fields, sent once a market settled: when, and for a scalar what Yes paid."""
    if settled_at is None:
        return {}
    record: Record = {"settlement_ts": iso(settled_at)}
    if result(market, yes_price) == "scalar":
        record |= priced("settlement_value", yes_price)
    return record


def expiration_value(market: Market, leg: Leg, yes_price: float) -> str:
    """The value a settled scalar settled on: the bottom of its range, or the top when Yes (long) won."""
    if result(market, yes_price) != "scalar" or leg.floor is None or leg.cap is None:
        return ""
    return f"{leg.floor + (leg.cap - leg.floor) * yes_price:.2f}"


def trade(market: Market, record: Record, with_taker_side: bool) -> Record:
    """A unified trade as Kalshi's: the taker bought its side (outcome 0 is Yes) at that side's price. The
    deprecated `taker_side` comes only `with_taker_side` (older data, from the historical tier)."""
    taker_yes = record["outcome"] == market.outcomes[0].name
    yes_price = record["price"] if taker_yes else round(1 - record["price"], 4)
    side = "yes" if taker_yes else "no"
    return {
        "trade_id": record["trade_id"],
        "ticker": market.id,
        "created_time": iso_seconds(record["timestamp"]),
        **({"taker_side": side} if with_taker_side else {}),
        "taker_outcome_side": side,
        "taker_book_side": "bid" if taker_yes else "ask",
        "is_block_trade": record["size"] >= BLOCK_TRADE_SIZE,
        **counted("count", record["size"]),
        **priced("yes_price", yes_price),
        **priced("no_price", round(1 - yes_price, 4)),
        "price": yes_price,
    }


def previous_closes(act: MarketActivity, first_trades: np.ndarray, interval: int) -> list[float | None]:
    """Per period (the index of its first trade, or of the first after it), Kalshi's `price.previous`: the close of
    the last period before it that had a trade (the Yes path at that period's end, as its candle closes); none
    before the market's first trade."""
    last_minutes = act.ts[np.maximum(first_trades - 1, 0)] // 60 if len(act.ts) else np.zeros(len(first_trades), int)
    period_ends = (last_minutes // interval + 1) * interval - act.start_minute
    closes = act.prices[0][np.clip(period_ends, 1, act.minutes) - 1]
    return [round(close, 4) if k else None for k, close in zip(first_trades.tolist(), closes.tolist(), strict=True)]


def candle(end_ts: int, ohlc: np.ndarray, tick: float, trades: int, volume: float, traded: float,
            previous: float | None) -> Record:
    """One candle as Kalshi sends it: `price` OHLC null in a period without trades, `price.previous` the Yes price
    of the last trade before the period (none before the first trade)."""
    o, h, lo, c = (float(v) for v in ohlc)
    price: Record = {"close": None, "high": None, "low": None, "open": None, "max": None, "min": None, "mean": None}
    if trades:
        price = {**_ohlc(lambda p: p, o, h, lo, c), "max": None, "min": None, "mean": cents(c)}
    if previous is not None:
        price |= priced("previous", previous)
    return {
        "end_period_ts": end_ts,
        "price": price,
        "yes_bid": _ohlc(lambda p: max(p - tick, 0.0), o, h, lo, c),
        "yes_ask": _ohlc(lambda p: min(p + tick, 1.0), o, h, lo, c),
        **counted("volume", volume),
        **counted("open_interest", round(traded * 0.35)),
    }


def _ohlc(shift: Callable[[float], float], o: float, h: float, lo: float, c: float) -> Record:
    values = {"open": o, "high": h, "low": lo, "close": c}
    return {k: v for name, p in values.items() for k, v in priced(name, round(shift(p), 4)).items()}
