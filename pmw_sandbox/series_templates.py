"""The kinds of series each platform lists, which the catalogue builder cycles through: titles, categories,
tags, market types, cadence (a short event a day, or long-running ones) and how each event's outcomes are drawn."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from pipeline.engine.schema import MarketType


@dataclass(frozen=True)
class SeriesTemplate:
    key: str
    title: str
    category: str
    tags: tuple[str, ...]
    market_type: MarketType
    daily: bool  # one short event per day, resolving that day, or long-running events
    outcomes: Callable[[np.random.Generator, int], tuple[tuple[str, str], ...]]  # (key, label) pairs


def yes_no(_rng: np.random.Generator, _i: int) -> tuple[tuple[str, str], ...]:
    return (("yes", "Yes"), ("no", "No"))


def _up_down(_rng: np.random.Generator, _i: int) -> tuple[tuple[str, str], ...]:
    return (("up", "Up"), ("down", "Down"))


def _long_short(_rng: np.random.Generator, _i: int) -> tuple[tuple[str, str], ...]:
    return (("long", "Long"), ("short", "Short"))


_TEAMS = ("LAL", "BOS", "NYK", "GSW", "MIA", "DEN", "PHX", "CHI", "DAL", "MIL", "OKC", "CLE")
_FED_OUTCOMES = ("No change", "25 bps decrease", "50+ bps decrease", "25+ bps increase")


def teams_of(rng: np.random.Generator, _i: int) -> tuple[tuple[str, str], ...]:
    a, b = rng.choice(len(_TEAMS), size=2, replace=False)
    return ((_TEAMS[a].lower(), _TEAMS[a]), (_TEAMS[b].lower(), _TEAMS[b]))


def _fed(_rng: np.random.Generator, _i: int) -> tuple[tuple[str, str], ...]:
    return tuple((label.lower().replace(" ", "-").replace("+", "plus"), label) for label in _FED_OUTCOMES)


KALSHI_TEMPLATES = (
    SeriesTemplate("KXBTCD", "Bitcoin price today", "Crypto", ("crypto", "bitcoin"), MarketType.BINARY, True, yes_no),
    SeriesTemplate(
        "KXHIGHNY",
        "Highest temperature in NYC today",
        "Climate and Weather",
        ("weather", "nyc"),
        MarketType.BINARY,
        True,
        yes_no,
    ),
    SeriesTemplate("KXFED", "Fed funds target rate", "Economics", ("fed", "rates"), MarketType.BINARY, False, yes_no),
    SeriesTemplate(
        "KXCPIYOY", "CPI year over year", "Economics", ("inflation", "cpi"), MarketType.SCALAR, False, _long_short
    ),
    SeriesTemplate(
        "KXNBAGAME",
        "Professional basketball game",
        "Sports",
        ("sports", "basketball"),
        MarketType.BINARY,
        True,
        yes_no,
    ),
)
POLYMARKET_TEMPLATES = (
    SeriesTemplate(
        "btc-up-or-down-daily",
        "Bitcoin Up or Down Daily",
        "Crypto",
        ("Crypto", "Bitcoin"),
        MarketType.BINARY,
        True,
        _up_down,
    ),
    SeriesTemplate(
        "fed-interest-rates",
        "Fed Interest Rates",
        "Economics",
        ("Economy", "Fed Rates"),
        MarketType.CATEGORICAL,
        False,
        _fed,
    ),
    SeriesTemplate("nba", "NBA", "Sports", ("Sports", "NBA", "Games"), MarketType.BINARY, True, teams_of),
    SeriesTemplate("us-politics", "US Politics", "Politics", ("Politics", "US"), MarketType.BINARY, False, yes_no),
    SeriesTemplate(
        "eth-weekly-range",
        "Ethereum Weekly Range",
        "Crypto",
        ("Crypto", "Ethereum"),
        MarketType.SCALAR,
        False,
        _long_short,
    ),
)
POLITICS_QUESTIONS = (
    "Will the Senate pass the appropriations bill by {d}?",
    "Will the President sign an executive order on tariffs by {d}?",
    "Will the government shut down before {d}?",
    "Will the Supreme Court rule on the case by {d}?",
)
