"""Watch lists and the snapshot settings: parsed once, validated, errors naming the file, the line and the fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.engine.config import ConfigError, Settings
from pipeline.engine.schema import Platform
from pipeline.engine.watchlists import WatchItem


def _settings(tmp_path: Path, **files: str) -> Settings:
    env = {}
    for name, text in files.items():
        path = tmp_path / f"{name}.csv"
        path.write_text(text)
        env[name] = str(path)
    return Settings.from_env(env)


def test_a_watch_list_keeps_each_line_once_in_order_and_skips_comments(tmp_path: Path) -> None:
    settings = _settings(tmp_path, PMW_ORDERBOOK_WATCHLIST="# books\n\nmanifold, Mz3kQ8vXe1 \nkalshi,KX-1\n"
                                                            "manifold,Mz3kQ8vXe1\n")
    assert settings.orderbook_watchlist == (WatchItem(Platform.MANIFOLD, "Mz3kQ8vXe1"),
                                            WatchItem(Platform.KALSHI, "KX-1"))
    assert Settings.from_env({}).orderbook_watchlist == ()


@pytest.mark.parametrize(("variable", "text", "said"), [
    ("PMW_ORDERBOOK_WATCHLIST", "polymarket,1\nbetfair,2\n", r"line 2: platform must be one of polymarket, kalshi, "
                                                             r"limitless, manifold, got 'betfair'"),
    ("PMW_ORDERBOOK_WATCHLIST", "kalshi\n", r"line 1: expected `platform,market_id`, got 'kalshi'"),
    ("PMW_TRADER_WATCHLIST", "limitless,someone\n", r"line 1: platform must be one of polymarket, kalshi"),
    ("PMW_TRADER_WATCHLIST", "kalshi," + "x" * 101 + "\n", r"line 1: user must be 1 to 100 characters"),
    ("PMW_TRADER_WATCHLIST", "kalshi,\n", r"line 1: user must be 1 to 100 characters"),
])
def test_a_bad_watch_list_line_is_named(tmp_path: Path, variable: str, text: str, said: str) -> None:
    with pytest.raises(ConfigError, match=rf"{variable}=.*{said}"):
        _settings(tmp_path, **{variable: text})


def test_a_missing_watch_list_file_is_named() -> None:
    with pytest.raises(ConfigError, match=r"PMW_TRADER_WATCHLIST=/no/such/file.csv: cannot be read"):
        Settings.from_env({"PMW_TRADER_WATCHLIST": "/no/such/file.csv"})


@pytest.mark.parametrize("minutes", [1, 15, 60, 180, 1440])
def test_a_cadence_that_tiles_the_day_is_taken(minutes: int) -> None:
    assert Settings.from_env({"PMW_ORDERBOOK_EVERY_MIN": str(minutes)}).orderbook_every_min == minutes


@pytest.mark.parametrize("value", ["7", "90", "2880", "0", "hourly"])
def test_a_cadence_that_does_not_tile_the_day_is_refused(value: str) -> None:
    with pytest.raises(ConfigError, match="PMW_ORDERBOOK_EVERY_MIN"):
        Settings.from_env({"PMW_ORDERBOOK_EVERY_MIN": value})
