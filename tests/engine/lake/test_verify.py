"""The scrub finds a lake file whose bytes changed on disk, and names it."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import pytest

from pipeline.cli.main import main
from pipeline.engine.lake.parquet_files import stored_schema
from pipeline.engine.lake.scrub import last_scrub
from pipeline.engine.lake.store import Lake
from pipeline.engine.lake.verify import verify_file, verify_lake
from pipeline.engine.warehouse.views import ensure_raw_views
from tests.support.frames import DAY, trades_frame

FLIPS = 60


@pytest.fixture
def lake(tmp_path: Path) -> Lake:
    return Lake(tmp_path / "lake")


def test_a_flipped_bit_is_found_by_the_scrub_or_changes_nothing_read(lake: Lake) -> None:
    """Single bits flipped at random places of a partition file: each flip is either named by the scrub, or
    leaves every row as it was (a flip in a statistic, in padding). None may change the rows unnoticed."""
    lake.write_partition("trades", "kalshi", DAY, trades_frame("kalshi", DAY, 3_000))
    path = lake.partition_path("trades", "kalshi", DAY)
    intact, rows = path.read_bytes(), lake.read_partition("trades", "kalshi", DAY)
    schema = stored_schema("trades")
    assert list(verify_lake(lake)) == [(path, None)] and verify_file(path, schema) is None
    dice = random.Random(19)
    found = unchanged = 0
    changed_unnoticed = []
    for _ in range(FLIPS):
        offset, bit = dice.randrange(len(intact)), dice.randrange(8)
        flipped = bytearray(intact)
        flipped[offset] ^= 1 << bit
        path.write_bytes(flipped)
        if verify_file(path, schema) is not None:
            found += 1
            continue
        try:
            same = lake.read_partition("trades", "kalshi", DAY).equals(rows)  # type: ignore[union-attr]
        except (Exception, pl.exceptions.PanicException):  # unreadable, yet the scrub said nothing: as bad
            same = False
        if same:
            unchanged += 1
        else:
            changed_unnoticed.append((offset, bit))
    print(f"{FLIPS} flips: {found} found by the scrub, {unchanged} changed nothing read")
    assert changed_unnoticed == []
    assert found > FLIPS // 2  # most of the file is compressed pages: most flips must be found


def test_pmw_verify_names_each_bad_file_and_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PMW_DATA_DIR", str(tmp_path / "data"))
    lake = Lake(tmp_path / "data" / "lake")
    for platform in ("kalshi", "polymarket"):
        lake.write_partition("trades", platform, DAY, trades_frame(platform, DAY, 500))
    assert main(["verify"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "pmw verify: 2 files, 0 bad"
    bad = lake.partition_path("trades", "polymarket", DAY)
    flipped = bytearray(bad.read_bytes())
    flipped[len(flipped) // 3] ^= 0xFF  # inside the compressed pages
    bad.write_bytes(flipped)
    assert main(["verify"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert [line for line in out if line.startswith("BAD ")] == [line for line in out if str(bad) in line]
    assert len([line for line in out if line.startswith("BAD ")]) == 1
    assert out[-1].startswith("pmw verify: 2 files, 1 bad")
    assert [str(b.path) for b in last_scrub(lake).bad] == [str(bad)]  # type: ignore[union-attr]  # as pmw status shows it
    lake.write_partition("trades", "polymarket", DAY, trades_frame("polymarket", DAY, 500))
    assert main(["verify"]) == 0 and last_scrub(lake).bad == ()  # type: ignore[union-attr]


def test_a_file_written_without_checksums_is_named(lake: Lake) -> None:
    lake.write_partition("trades", "kalshi", DAY, trades_frame("kalshi", DAY, 10))
    path = lake.partition_path("trades", "kalshi", DAY)
    pq.write_table(pq.read_table(path).replace_schema_metadata(None), path)  # as files were before checksums
    assert "without page checksums" in (verify_file(path, stored_schema("trades")) or "")


def test_pmw_verify_names_views_that_read_another_lake(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The views hold the lake's absolute path: a copied data dir reads the original's lake until a pmw command
    writes its views again. pmw verify says so."""
    original = tmp_path / "original"
    Lake(original / "lake").write_partition("trades", "kalshi", DAY, trades_frame("kalshi", DAY, 5))
    ensure_raw_views(original / "warehouse.duckdb", Lake(original / "lake"))
    copy = tmp_path / "copy"
    shutil.copytree(original, copy)
    monkeypatch.setenv("PMW_DATA_DIR", str(copy))
    assert main(["verify"]) == 1
    assert "read another lake" in capsys.readouterr().out
    ensure_raw_views(copy / "warehouse.duckdb", Lake(copy / "lake"))  # what a pmw backfill in the copy does
    assert main(["verify"]) == 0
