"""The spool a window's days land from: every row and reject served once, to its day; a sweep cut short
redone; a market the sweep missed read for its day alone; the spool gone once every day is served."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import polars as pl
import pytest

from pipeline.engine.normalized import MarketsDone, Normalized
from pipeline.engine.schema import REJECTS_SCHEMA, TABLES
from pipeline.engine.sources.coverage import Coverage
from pipeline.engine.spool.window import Window, WindowSweeps, token_digest

FIRST = date(2026, 11, 19)
WINDOW = Window(FIRST, FIRST + timedelta(days=2), "test")
SCHEMA = TABLES["trades"].polars_schema


def _at(day: int, hour: int = 12) -> datetime:
    return datetime.combine(FIRST + timedelta(days=day), datetime.min.time(), UTC) + timedelta(hours=hour)


def _trades(*rows: tuple[str, datetime]) -> pl.DataFrame:
    return pl.DataFrame({
        "trade_id": [f"{market}-{moment:%d%H}" for market, moment in rows],
        "market_id": [market for market, _ in rows],
        "timestamp": [moment for _, moment in rows],
    }).cast({"timestamp": SCHEMA["timestamp"]}).select(
        pl.col(name) if name in ("trade_id", "market_id", "timestamp") else pl.lit(None, dtype=dtype).alias(name)
        for name, dtype in SCHEMA.items())


def _rejects(*raws: str) -> pl.DataFrame:
    return pl.DataFrame({"raw": list(raws), "reason": ["bad"] * len(raws),
                         "_fetched_at": [_at(0)] * len(raws)}, schema=REJECTS_SCHEMA)


class FakeSource:
    """A window source over fixed trades of markets "a" and "b"; "c" is listed for the last day only after the
    sweep (read alone then). `fail` cuts the sweep short once."""

    platform = "kalshi"

    def __init__(self, fail: bool = False) -> None:
        self.fail, self.sweeps, self.alone = fail, 0, 0

    def asked(self, table: str, markets: pl.DataFrame, day: date) -> set[str]:
        return set(markets["id"].to_list())

    def window_markets(self, first: date, last: date) -> Normalized:
        return Normalized(pl.DataFrame({"id": ["a", "b"]}), pl.DataFrame(schema=REJECTS_SCHEMA))

    def window_trades(self, first: date, last: date,
                      markets: pl.DataFrame) -> Iterator[Normalized | MarketsDone]:
        self.sweeps += 1
        yield Normalized(_trades(("a", _at(2)), ("a", _at(1)), ("a", _at(0)), ("a", _at(-1))),
                         _rejects(f'{{"timestamp": {_at(1).timestamp():.0f}}}', '{"timestamp": "soon"}',
                                  f'{{"timestamp": {_at(-3).timestamp():.0f}}}'))
        if self.fail:
            self.fail = False
            raise ConnectionError("cut")
        yield MarketsDone("a")
        yield Normalized(_trades(("b", _at(0, 3)), ("b", _at(0, 1))), _rejects('{"timestamp": "2026-11-19T05:00:00Z"}'))
        yield MarketsDone("b")

    def trades(self, day: date, markets: pl.DataFrame) -> Iterator[Normalized | MarketsDone]:
        self.alone += 1
        yield Normalized(_trades(*((m, _at((day - FIRST).days, 9)) for m in markets["id"])),
                         pl.DataFrame(schema=REJECTS_SCHEMA))
        yield MarketsDone(markets["id"][-1])

    def coverage(self) -> Coverage:
        return Coverage()


def _serve(sweeps: WindowSweeps, source: FakeSource, day: date, markets: list[str]) -> tuple[pl.DataFrame, list[str]]:
    items = list(sweeps.day_stream(source, "trades", WINDOW, day,  # type: ignore[arg-type]
                                   pl.DataFrame({"id": markets}), Coverage()))
    chunks = [item for item in items if isinstance(item, Normalized)]
    rows = pl.concat([c.rows for c in chunks if c.rows.width], how="vertical")
    return rows, [raw for c in chunks for raw in c.rejects["raw"].to_list()]


def test_each_row_and_reject_of_a_sweep_lands_once_on_its_day_and_the_spool_goes(tmp_path: Path) -> None:
    sweeps, source = WindowSweeps(tmp_path), FakeSource()
    served = {n: _serve(sweeps, source, FIRST + timedelta(days=n), ["a", "b"]) for n in range(3)}
    assert source.sweeps == 1 and source.alone == 0
    assert served[0][0].sort("timestamp")["trade_id"].to_list() == ["b-1901", "b-1903", "a-1912"]
    assert served[1][0]["trade_id"].to_list() == ["a-2012"] and served[2][0]["trade_id"].to_list() == ["a-2112"]
    assert served[0][0]["date"].unique().to_list() == [FIRST]  # the day's own, whatever day the sweep began on
    rejects = [raw for n in range(3) for raw in served[n][1]]
    assert sorted(rejects) == sorted(set(rejects)) and len(rejects) == 4  # each once
    assert served[0][1] == ['{"timestamp": "2026-11-19T05:00:00Z"}']
    assert len(served[1][1]) == 1 and len(served[2][1]) == 2  # no readable time in the window: the last day
    assert not list(tmp_path.iterdir())  # the spool is gone, and its window's directory with it


def test_a_sweep_cut_short_is_redone_and_a_market_it_missed_is_read_alone(tmp_path: Path) -> None:
    sweeps, source = WindowSweeps(tmp_path), FakeSource(fail=True)
    with pytest.raises(ConnectionError):
        _serve(sweeps, source, FIRST, ["a", "b"])
    assert not list(tmp_path.glob("*/trades/manifest.json"))
    rows, _ = _serve(sweeps, source, FIRST, ["a", "b"])
    assert source.sweeps == 2 and rows.height == 3
    rows, _ = _serve(sweeps, source, FIRST + timedelta(days=2), ["a", "c"])  # "c" listed since the sweep
    assert source.sweeps == 2 and source.alone == 1
    assert sorted(rows["trade_id"].to_list()) == ["a-2112", "c-2109"]  # "b" is not the day's; "c" read alone


def _killed_owner_of(sweeps: WindowSweeps, token: str, spool: str) -> None:
    """A process that owns the windows of `token`, spools into `spool` and is killed (SIGKILL) meanwhile."""
    ready, told = os.pipe()
    child = os.fork()
    if child == 0:  # the child: no polars, only the owner's lock and a directory
        with sweeps.owning(token):
            (sweeps.root / spool / "trades").mkdir(parents=True)
            os.write(told, b"1")
            time.sleep(60)
        os._exit(0)
    assert os.read(ready, 1) == b"1"
    os.kill(child, signal.SIGKILL)
    os.waitpid(child, 0)


def test_the_spools_of_a_killed_backfill_go_at_the_next_start_and_a_running_ones_stay(tmp_path: Path) -> None:
    sweeps = WindowSweeps(tmp_path)
    with sweeps.owning("running"):
        _killed_owner_of(sweeps, "killed", "kalshi_2026-11-01_2026-11-07_" + token_digest("killed"))
        running = tmp_path / f"kalshi_2026-11-01_2026-11-07_{token_digest('running')}" / "trades"
        running.mkdir(parents=True)
        _serve(sweeps, FakeSource(), FIRST, ["a", "b"])  # the next sweep starts: the dead spool goes
        assert not list(tmp_path.glob(f"*_{token_digest('killed')}*")), "the killed backfill's spool and owner are gone"
        assert running.is_dir(), "a running backfill's spool stays"
    assert not list(tmp_path.glob(f"*_{token_digest('running')}*")), "a finished backfill leaves none of its own"
    assert WindowSweeps(tmp_path).remove_dead() == []
