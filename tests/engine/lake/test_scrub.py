"""The scheduled scrub reads what changed since its last run (the whole lake when it is due), keeps the bad files in
view until they are put right, and records what it found in the lake."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from pipeline.engine.config import Settings
from pipeline.engine.lake import verify
from pipeline.engine.lake.scrub import last_scrub, scrub
from pipeline.engine.lake.store import Lake
from pipeline.engine.schema import TABLES
from tests.support.frames import DAY, trades_frame

NOW = datetime(2026, 11, 26, 3, 0, tzinfo=UTC)
WEEK = timedelta(days=7)


@pytest.fixture
def lake(tmp_path: Path) -> Lake:
    lake = Lake(tmp_path / "lake")
    for platform in ("kalshi", "polymarket"):
        lake.write_partition("trades", platform, DAY, trades_frame(platform, DAY, 200))
    return lake


def flip(path: Path) -> None:
    """A byte inverted inside the compressed pages, the file's modification time kept (as a disk's bit rot)."""
    status = os.stat(path)
    flipped = bytearray(path.read_bytes())
    flipped[len(flipped) // 3] ^= 0xFF
    path.write_bytes(flipped)
    os.utime(path, ns=(status.st_atime_ns, status.st_mtime_ns))


def test_the_first_scrub_reads_the_whole_lake_and_records_it(lake: Lake) -> None:
    assert last_scrub(lake) is None
    record = scrub(lake, NOW, WEEK)
    assert (record.whole, record.checked, record.bad, record.whole_at) == (True, 2, (), NOW)
    assert last_scrub(lake) == record


def test_a_later_scrub_reads_only_the_files_written_since(lake: Lake) -> None:
    scrub(lake, NOW, WEEK)
    assert scrub(lake, NOW + timedelta(days=1), WEEK).checked == 0
    lake.write_partition("trades", "kalshi", DAY, trades_frame("kalshi", DAY, 300))
    record = scrub(lake, NOW + timedelta(days=2), WEEK)
    assert (record.whole, record.checked, record.whole_at) == (False, 1, NOW)


def test_a_file_changed_in_place_is_found_and_stays_bad_until_put_right(lake: Lake) -> None:
    scrub(lake, NOW, WEEK)
    bad = lake.partition_path("trades", "polymarket", DAY)
    flipped = bytearray(bad.read_bytes())
    flipped[len(flipped) // 3] ^= 0xFF
    bad.write_bytes(flipped)
    for day in (1, 2):
        record = scrub(lake, NOW + timedelta(days=day), WEEK)
        assert [(b.table, b.path) for b in record.bad] == [("trades", bad)], day
        assert "checksum" in record.bad[0].problem or "unreadable" in record.bad[0].problem
    lake.write_partition("trades", "polymarket", DAY, trades_frame("polymarket", DAY, 200))
    assert scrub(lake, NOW + timedelta(days=3), WEEK).bad == ()


def test_bit_rot_that_keeps_the_stamp_is_found_by_the_whole_lake_scrub_when_due(lake: Lake) -> None:
    lake.write_partition("trades", "kalshi", DAY, trades_frame("kalshi", DAY, 200))
    bad = lake.partition_path("trades", "kalshi", DAY)
    scrub(lake, NOW, WEEK)
    flip(bad)
    assert scrub(lake, NOW + timedelta(days=6), WEEK).bad == ()  # the stamp has not changed: not read
    record = scrub(lake, NOW + timedelta(days=7), WEEK)
    assert record.whole and [b.path for b in record.bad] == [bad]


def test_a_record_that_does_not_read_means_a_whole_scrub(lake: Lake) -> None:
    scrub(lake, NOW, WEEK)
    (lake.root / "_scrub" / "last.json").write_text("{not json")
    assert last_scrub(lake) is None
    assert scrub(lake, NOW + timedelta(days=1), WEEK).whole


def test_on_an_object_store_the_record_is_kept_in_the_bucket_and_a_replaced_object_is_read_again(
    s3_lake_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(verify, "lake_tables", lambda: {"trades": TABLES["trades"]})  # a listing per table costs
    lake = Lake.of(Settings(data_dir=tmp_path / "data", lake_url=s3_lake_url))
    lake.write_partition("trades", "kalshi", DAY, trades_frame("kalshi", DAY, 200))
    lake.write_partition("trades", "polymarket", DAY, trades_frame("polymarket", DAY, 200))
    assert scrub(lake, NOW, WEEK).checked == 2
    lake.write_partition("trades", "kalshi", DAY, trades_frame("kalshi", DAY, 250))
    another_host = Lake.of(Settings(data_dir=tmp_path / "elsewhere", lake_url=s3_lake_url))
    record = scrub(another_host, NOW + timedelta(days=1), WEEK)  # the first host's record, read from the bucket
    assert (record.whole, record.checked, record.bad) == (False, 1, ())
