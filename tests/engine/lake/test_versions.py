"""A partition replaced by a later write is kept (PMW_KEEP_VERSIONS of them) and can be put back."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from pipeline.cli.main import main
from pipeline.engine.lake.store import Lake
from pipeline.engine.lake.verify import verify_lake
from pipeline.engine.schema import REJECTS_SCHEMA
from tests.support.frames import DAY, trades_frame

REJECTS = pl.DataFrame({"raw": ["{}"], "reason": ["no trade_id"], "_fetched_at": [datetime(2026, 11, 21, tzinfo=UTC)]},
                       schema=REJECTS_SCHEMA)


def _rows(lake: Lake) -> int:
    frame = lake.read_partition("trades", "kalshi", DAY)
    assert frame is not None
    return frame.height


def test_replaced_versions_are_kept_newest_first_and_pruned(tmp_path: Path) -> None:
    lake = Lake(tmp_path / "lake", keep_versions=2)
    for n in (5, 7, 9, 11):
        lake.write_partition("trades", "kalshi", DAY, trades_frame("kalshi", DAY, n, seed=n))
    assert [v.rows for v in lake.versions("trades", "kalshi", DAY)] == [9, 7]  # 5 was pruned: two are kept
    assert lake.partitions("trades") == [("kalshi", DAY)]  # no reader of the table meets a version
    assert [path for path, _ in verify_lake(lake)] == [lake.partition_path("trades", "kalshi", DAY)]
    assert Lake(tmp_path / "other").versions("trades", "kalshi", DAY) == []


def test_a_restore_puts_a_version_back_rejects_and_all_and_can_be_undone(tmp_path: Path) -> None:
    lake = Lake(tmp_path / "lake", keep_versions=3)
    lake.write_partition("trades", "kalshi", DAY, trades_frame("kalshi", DAY, 5, seed=1), REJECTS)
    first = lake.read_partition("trades", "kalshi", DAY)
    lake.write_partition("trades", "kalshi", DAY, trades_frame("kalshi", DAY, 8, seed=2))  # no rejects this time
    assert lake.read_rejects("trades", "kalshi", DAY) is None
    restored = lake.restore("trades", "kalshi", DAY)
    assert restored.rows == 5
    assert_frame_equal(lake.read_partition("trades", "kalshi", DAY), first)  # type: ignore[arg-type]
    assert_frame_equal(lake.read_rejects("trades", "kalshi", DAY), REJECTS)  # type: ignore[arg-type]
    newest = lake.versions("trades", "kalshi", DAY)[0]
    assert newest.rows == 8  # what the restore replaced
    lake.restore("trades", "kalshi", DAY, newest.stamp)  # undo
    assert _rows(lake) == 8 and lake.read_rejects("trades", "kalshi", DAY) is None
    with pytest.raises(LookupError, match="kept: "):
        lake.restore("trades", "kalshi", DAY, "20000101T000000.000000Z")


def test_restores_prune_to_the_versions_kept_even_the_oldest_one_restored(tmp_path: Path) -> None:
    lake = Lake(tmp_path / "lake", keep_versions=2)
    for n in (5, 7, 9):
        lake.write_partition("trades", "kalshi", DAY, trades_frame("kalshi", DAY, n, seed=n))
    for _ in range(20):
        lake.restore("trades", "kalshi", DAY)
    assert len(lake.versions("trades", "kalshi", DAY)) == 2  # not 21: PMW_KEEP_VERSIONS hold for restores too
    oldest = lake.versions("trades", "kalshi", DAY)[-1]
    rows = oldest.rows
    lake.restore("trades", "kalshi", DAY, oldest.stamp)  # the version pruned is the one put back: copied first
    assert _rows(lake) == rows and len(lake.versions("trades", "kalshi", DAY)) == 2


def test_no_versions_are_kept_when_none_are_asked_for(tmp_path: Path) -> None:
    lake = Lake(tmp_path / "lake")
    for n in (3, 4):
        lake.write_partition("trades", "kalshi", DAY, trades_frame("kalshi", DAY, n, seed=n))
    assert lake.versions("trades", "kalshi", DAY) == []
    with pytest.raises(LookupError, match=r"kept: none"):
        lake.restore("trades", "kalshi", DAY)


def test_pmw_restore_lists_and_restores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PMW_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("PMW_KEEP_VERSIONS", raising=False)
    lake = Lake(tmp_path / "data" / "lake", keep_versions=3)
    for n in (4, 6):
        lake.write_partition("trades", "kalshi", DAY, trades_frame("kalshi", DAY, n, seed=n))
    partition = ["--table", "trades", "--platform", "kalshi", "--date", DAY.isoformat()]
    assert main(["restore", *partition, "--list"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert listed[0] == f"trades kalshi {DAY}: now 6 rows; 1 kept version(s), newest first" and "4 rows" in listed[1]
    assert main(["restore", *partition]) == 0
    assert "is the version replaced at" in capsys.readouterr().out and _rows(lake) == 4
    assert main(["restore", "--table", "trades", "--platform", "polymarket", "--date", DAY.isoformat()]) == 1
    assert "no kept version" in capsys.readouterr().out


def test_pmw_restore_knows_every_table_of_the_lake(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Order books, traders and sports too (a sports table's partition is a league), each with its own values."""
    monkeypatch.setenv("PMW_DATA_DIR", str(tmp_path / "data"))
    for table, value in (("orderbook_snapshots", "limitless"), ("profiles", "kalshi"), ("futures", "nfl")):
        assert main(["restore", "--table", table, "--platform", value, "--date", DAY.isoformat(), "--list"]) == 0
        assert capsys.readouterr().out.startswith(f"{table} {value} {DAY}: now no readable file; 0 kept version(s)")
    assert main(["restore", "--table", "futures", "--platform", "kalshi", "--date", DAY.isoformat()]) == 2
    assert capsys.readouterr().err == (
        "pmw restore: table futures is partitioned by league: --platform nfl, nba, nhl or mlb, not 'kalshi'\n")
